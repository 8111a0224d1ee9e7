import { boolean, index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts, updatedAt } from './orgs.table';

interface TriggerScheduleRow {
  cron_expression: string | null;
  interval_hours: number | null;
  next_run_at: string | null;
  last_run_at: string | null;
  last_run_status: string | null;
}

/** In src/database/ like the sources table (see there): the agent cascade writes it. */
/** In src/database/ like the sources table (see there): the agent cascade writes it. */
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
