import { iso } from '../common/iso';
import type { orgs } from '../database/orgs.table';
import type { OrgDto } from './orgs.dto';

export type OrgRow = typeof orgs.$inferSelect;

/** Whitelisted response: built field by field from the row. */
export function mapOrg(row: OrgRow): OrgDto {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    plan: row.plan,
    status: row.status,
    credits: {
      total: row.credits.total,
      used: row.credits.used,
      remaining: row.credits.remaining,
      top_up: row.credits.top_up ?? 0,
      reset_at: row.credits.reset_at ?? null,
    },
    limits: {
      agents: row.limits.agents ?? null,
      connectors: row.limits.connectors ?? null,
      sources: row.limits.sources ?? null,
      chatbots: row.limits.chatbots ?? null,
      scheduled_triggers: row.limits.scheduled_triggers ?? null,
      custom_tool_slots: row.limits.custom_tool_slots ?? null,
    },
    trial: row.trial ? { start_date: row.trial.start_date ?? null, end_date: row.trial.end_date ?? null } : null,
    created_at: iso(row.createdAt),
  };
}
