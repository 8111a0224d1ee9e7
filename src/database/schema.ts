import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  date,
  index,
  integer,
  json,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

/**
 * One schema for both engines (PGlite and a PostgreSQL server). Ids are
 * `<prefix>_<24 hex>` with a timestamp first, so `ORDER BY id DESC` is
 * newest-first and every list index is `(org_id, …, id)`.
 *
 * Every table that belongs to an organization carries `org_id` with a
 * cascading foreign key; repositories filter on it in every query.
 */

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const createdAt = () => ts('created_at').notNull().defaultNow();
const updatedAt = () => ts('updated_at').notNull().defaultNow();
const orgId = () =>
  text('org_id')
    .notNull()
    .references(() => orgs.id, { onDelete: 'cascade' });

export interface OrgCredits {
  total: number;
  used: number;
  remaining: number;
  top_up: number;
  reset_at: string | null;
}

export interface OrgLimits {
  agents: number | null;
  connectors: number | null;
  sources: number | null;
  chatbots: number | null;
  scheduled_triggers: number | null;
  custom_tool_slots: number | null;
}

export interface OrgTrial {
  start_date: string | null;
  end_date: string | null;
}

export const orgs = pgTable('orgs', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  slug: text('slug').notNull().unique('orgs_slug_unique'),
  plan: text('plan').notNull(),
  status: text('status').notNull().default('active'),
  credits: jsonb('credits').$type<OrgCredits>().notNull(),
  limits: jsonb('limits').$type<OrgLimits>().notNull(),
  trial: jsonb('trial').$type<OrgTrial | null>(),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    label: text('label').notNull(),
    /** first characters of the secret: narrows the lookup before the hash is compared */
    lookupPrefix: text('lookup_prefix').notNull(),
    /** SHA-256 (hex) of the whole token; the token itself is never stored */
    tokenHash: text('token_hash').notNull(),
    scopes: text('scopes').array().notNull(),
    expiresAt: ts('expires_at'),
    revokedAt: ts('revoked_at'),
    lastUsedAt: ts('last_used_at'),
    createdAt: createdAt(),
  },
  (t) => [index('api_keys_lookup_prefix_idx').on(t.lookupPrefix), index('api_keys_org_idx').on(t.orgId, t.id)],
);

export const members = pgTable(
  'members',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    userId: text('user_id').notNull(),
    name: text('name'),
    email: text('email').notNull(),
    role: text('role').notNull(),
    isActive: boolean('is_active').notNull().default(true),
    lastLoginAt: ts('last_login_at'),
    createdAt: createdAt(),
  },
  (t) => [index('members_org_idx').on(t.orgId, t.id), uniqueIndex('members_org_user_unique').on(t.orgId, t.userId)],
);

export interface ConnectorToolRow {
  name: string;
  label?: string;
  description?: string;
  type?: 'read' | 'write';
  requires_confirmation?: boolean;
  disabled?: boolean;
}

export const connectors = pgTable(
  'connectors',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    type: text('type').notNull(),
    name: text('name').notNull(),
    status: text('status').notNull().default('connected'),
    statusReason: text('status_reason'),
    isActive: boolean('is_active').notNull().default(true),
    tools: jsonb('tools').$type<ConnectorToolRow[]>().notNull().default([]),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('connectors_org_idx').on(t.orgId, t.id)],
);

export interface ToolRefRow {
  name: string;
  connector_id?: string | null;
}

export interface DataSourceRefRow {
  source_id: string;
  scope: 'all' | 'selected';
  documents?: string[];
}

export const agents = pgTable(
  'agents',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    handle: text('handle').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    model: text('model'),
    instructions: text('instructions'),
    instructionsHtml: text('instructions_html'),
    isActive: boolean('is_active').notNull().default(true),
    color: text('color').default('#6366f1'),
    avatar: text('avatar'),
    includeSystemPrompt: boolean('include_system_prompt').notNull().default(true),
    tools: jsonb('tools').$type<ToolRefRow[]>().notNull().default([]),
    connectors: text('connectors').array().notNull().default(sql`'{}'::text[]`),
    subAgents: text('sub_agents').array().notNull().default(sql`'{}'::text[]`),
    dataSources: jsonb('data_sources').$type<DataSourceRefRow[]>().notNull().default([]),
    pendingTriggerHint: jsonb('pending_trigger_hint').$type<Record<string, unknown> | null>(),
    deactivatedReason: text('deactivated_reason'),
    deactivatedAt: ts('deactivated_at'),
    deletedAt: ts('deleted_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('agents_org_idx').on(t.orgId, t.id),
    // handles are unique per organization, case-insensitively, among live agents
    uniqueIndex('agents_org_handle_unique')
      .on(t.orgId, sql`lower(${t.handle})`)
      .where(sql`${t.deletedAt} is null`),
    index('agents_deleted_at_idx').on(t.deletedAt).where(sql`${t.deletedAt} is not null`),
    index('agents_sub_agents_gin').using('gin', t.subAgents),
  ],
);

export const conversations = pgTable(
  'conversations',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    title: text('title'),
    source: text('source').notNull(),
    agentId: text('agent_id'),
    model: text('model'),
    autonomous: boolean('autonomous').notNull().default(false),
    isOnboarding: boolean('is_onboarding').notNull().default(false),
    isSimulation: boolean('is_simulation').notNull().default(false),
    conversationNumber: integer('conversation_number'),
    parentConversationId: text('parent_conversation_id'),
    creditsUsed: integer('credits_used').notNull().default(0),
    metadata: jsonb('metadata').$type<Record<string, unknown> | null>(),
    triggerPayload: jsonb('trigger_payload'),
    /** ticket id normalized to text from metadata.ticketId / metadata.ticket_id / trigger_payload.ticket.id */
    ticketIds: text('ticket_ids').array().notNull().default(sql`'{}'::text[]`),
    messageCount: integer('message_count').notNull().default(0),
    lastMessageAt: ts('last_message_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('conversations_org_idx').on(t.orgId, t.id),
    index('conversations_org_source_idx').on(t.orgId, t.source, t.id),
    index('conversations_org_agent_idx').on(t.orgId, t.agentId, t.id),
    // sub-agent runs only: every top-level conversation has no parent
    index('conversations_org_parent_set_idx').on(t.orgId, t.parentConversationId, t.id).where(sql`${t.parentConversationId} IS NOT NULL`),
    index('conversations_org_number_idx').on(t.orgId, t.conversationNumber),
    index('conversations_org_model_idx').on(t.orgId, t.model, t.id),
    // source + model, whose common values combine into rare or empty sets
    index('conversations_org_source_model_idx').on(t.orgId, t.source, t.model, t.id),
    index('conversations_org_last_message_idx').on(t.orgId, t.lastMessageAt),
    index('conversations_org_created_idx').on(t.orgId, t.createdAt),
    // agent analytics: one agent's conversations in a window's partial days are read from
    // `conversations_org_agent_created_cover_idx` (org_id, agent_id, created_at) INCLUDE (the counted
    // columns), an index-only scan; drizzle-kit cannot express INCLUDE, so it lives in its migration alone
    // `q`, a frequent term away from the newest rows: `conversations_title_bucket_gin` keys each title's trigrams
    // by its id's 18-hour bucket (migration 0011); drizzle-kit cannot express the key functions, so it lives there alone
    // rare flags: small partial indexes keep is_onboarding=true / is_simulation=true off a full scan
    index('conversations_org_onboarding_idx').on(t.orgId, t.id).where(sql`${t.isOnboarding}`),
    index('conversations_org_simulation_idx').on(t.orgId, t.id).where(sql`${t.isSimulation}`),
    index('conversations_ticket_ids_gin').using('gin', t.ticketIds),
    // {org_id: metadata}: each indexed key carries its organization (ConversationsRepository's metadata predicate spells the same expression)
    index('conversations_org_metadata_gin').using('gin', sql`(jsonb_set('{}'::jsonb, ARRAY[${t.orgId}], ${t.metadata})) jsonb_path_ops`).with({ fastupdate: false }),
  ],
);

/*
 * Agent analytics rollups, written only by triggers on `conversations` (the
 * `agent_usage_rollup` migration defines them), so that every write path keeps them exact, set-based
 * seeding included. Keys are UTC days of `created_at`; conversations without an
 * agent are not counted.
 */

/** per agent and UTC day: the sums the analytics totals and daily series add up */
export const agentDailyUsage = pgTable(
  'agent_daily_usage',
  {
    orgId: orgId(),
    agentId: text('agent_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    conversations: integer('conversations').notNull(),
    messages: bigint('messages', { mode: 'number' }).notNull(),
    creditsUsed: bigint('credits_used', { mode: 'number' }).notNull(),
    autonomous: integer('autonomous').notNull(),
    simulations: integer('simulations').notNull(),
    dashboard: integer('dashboard').notNull(),
    autonomousSource: integer('autonomous_source').notNull(),
    embed: integer('embed').notNull(),
    subAgent: integer('sub_agent').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.day] })],
);

/** per agent, ticket id and UTC day: how many conversations about that ticket the agent had that day */
export const agentTicketDays = pgTable(
  'agent_ticket_days',
  {
    orgId: orgId(),
    agentId: text('agent_id').notNull(),
    ticket: text('ticket').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    conversations: integer('conversations').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.ticket, t.day] })],
);

/**
 * per agent and UTC day: how many of that day's tickets the agent last saw on
 * `previous_day` (`-infinity`: never before). The distinct tickets of whole
 * days [a, b) are the sum over those days with `previous_day < a`: each ticket
 * counts once, on its first day inside the range.
 */
export const agentDailyTickets = pgTable(
  'agent_daily_tickets',
  {
    orgId: orgId(),
    agentId: text('agent_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    previousDay: date('previous_day', { mode: 'string' }).notNull(),
    tickets: integer('tickets').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.day, t.previousDay] })],
);

export interface ToolCallRow {
  id: string;
  name: string;
  arguments: string;
  status?: string | null;
}

export const messages = pgTable(
  'messages',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    conversationId: text('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    role: text('role').notNull(),
    content: text('content').notNull(),
    toolCalls: jsonb('tool_calls').$type<ToolCallRow[] | null>(),
    toolCallId: text('tool_call_id'),
    toolName: text('tool_name'),
    connectorType: text('connector_type'),
    model: text('model'),
    createdAt: ts('created_at'),
  },
  (t) => [index('messages_conversation_idx').on(t.orgId, t.conversationId, t.id)],
);

interface TriggerScheduleRow {
  cron_expression: string | null;
  interval_hours: number | null;
  next_run_at: string | null;
  last_run_at: string | null;
  last_run_status: string | null;
}

export const triggers = pgTable(
  'triggers',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    agentId: text('agent_id'),
    connectorId: text('connector_id'),
    connectorType: text('connector_type').notNull(),
    event: text('event').notNull(),
    isActive: boolean('is_active').notNull().default(true),
    conditions: jsonb('conditions').$type<Record<string, unknown> | null>(),
    settings: jsonb('settings').$type<Record<string, unknown>>().notNull().default({}),
    schedule: jsonb('schedule').$type<TriggerScheduleRow | null>(),
    /** id of the webhook registered with the third-party tool, kept across pause/resume */
    webhookId: text('webhook_id'),
    /** 'active' | 'paused' | 'torn_down' | null (no external webhook) */
    webhookStatus: text('webhook_status'),
    /** why the agent cascade deactivated this trigger; null when it was not the cascade */
    deactivatedReason: text('deactivated_reason'),
    deactivatedAt: ts('deactivated_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('triggers_org_idx').on(t.orgId, t.id), index('triggers_org_agent_idx').on(t.orgId, t.agentId)],
);

export const chatbots = pgTable(
  'chatbots',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    publicId: text('public_id').notNull().unique('chatbots_public_id_unique'),
    name: text('name').notNull(),
    agentId: text('agent_id'),
    isActive: boolean('is_active').notNull().default(true),
    allowWriteTools: boolean('allow_write_tools').notNull().default(false),
    allowedDomains: text('allowed_domains').array().notNull().default(sql`'{}'::text[]`),
    theme: jsonb('theme').$type<Record<string, unknown> | null>(),
    welcomeMessage: text('welcome_message'),
    deactivatedReason: text('deactivated_reason'),
    deactivatedAt: ts('deactivated_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('chatbots_org_idx').on(t.orgId, t.id), index('chatbots_org_agent_idx').on(t.orgId, t.agentId)],
);

export interface CustomToolParamRow {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'integer';
  description?: string;
  required: boolean;
  in: 'query' | 'header' | 'body';
  headerName?: string;
}

export interface CustomToolGroupRow {
  name: string;
  icon: string | null;
  color: string | null;
}

export const customTools = pgTable(
  'custom_tools',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    name: text('name').notNull(),
    label: text('label').notNull(),
    description: text('description').notNull(),
    type: text('type').notNull().default('read'),
    method: text('method').notNull(),
    url: text('url').notNull(),
    headers: jsonb('headers').$type<Record<string, string>>().notNull().default({}),
    bodyTemplate: text('body_template'),
    parameters: jsonb('parameters').$type<CustomToolParamRow[]>().notNull().default([]),
    responseMapping: text('response_mapping'),
    authType: text('auth_type').notNull().default('none'),
    authHeaderName: text('auth_header_name'),
    /** AES-256-GCM envelope of the credentials object; never returned */
    credentialsCiphertext: text('credentials_ciphertext'),
    group: jsonb('group').$type<CustomToolGroupRow | null>(),
    isActive: boolean('is_active').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('custom_tools_org_idx').on(t.orgId, t.id), uniqueIndex('custom_tools_org_name_unique').on(t.orgId, t.name)],
);

export const sources = pgTable(
  'sources',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    type: text('type').notNull(),
    name: text('name').notNull(),
    connectorId: text('connector_id'),
    connectorType: text('connector_type'),
    syncStatus: text('sync_status').notNull().default('ready'),
    lastSyncAt: ts('last_sync_at'),
    documentCount: integer('document_count'),
    isActive: boolean('is_active').notNull().default(true),
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('sources_org_idx').on(t.orgId, t.id),
    // the upload source is a per-organization singleton
    uniqueIndex('sources_org_upload_unique').on(t.orgId).where(sql`${t.type} = 'upload'`),
  ],
);

export const documents = pgTable(
  'documents',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    sourceId: text('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('documents_source_idx').on(t.orgId, t.sourceId, t.id)],
);

export const idempotencyRecords = pgTable(
  'idempotency_records',
  {
    orgId: orgId(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    status: integer('status').notNull(),
    /**
     * json, not jsonb: the text exactly as first sent (jsonb reorders object
     * keys), so a replay is the first response byte for byte but its request_id
     */
    body: json('body').notNull(),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.key] }), index('idempotency_records_expires_idx').on(t.expiresAt)],
);

/**
 * The seed files the server applied at start-up, one row per file content
 * (SHA-256 of its bytes). Written in the transaction that wrote the file's
 * rows, so a crash cannot record a file without its rows; the primary key is
 * what lets instances starting together apply one content once. Not an
 * organization's: a seed file spans organizations, and no tenant reads it.
 */
export const seedApplications = pgTable('seed_applications', {
  contentSha256: text('content_sha256').primaryKey(),
  appliedAt: ts('applied_at').notNull().defaultNow(),
});
