import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts, updatedAt } from '../database/orgs.table';

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
