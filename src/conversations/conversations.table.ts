import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts, updatedAt } from '../database/orgs.table';

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
    // the planner lists the 300 most common agents, not 100 (migration 0017; drizzle-kit cannot express a statistics target)
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
