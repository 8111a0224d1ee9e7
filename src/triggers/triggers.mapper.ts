import type { triggers } from '../database/triggers.table';
import { iso } from '../common/iso';
import { CRON_SCHEDULED_EVENT, type TriggerDto, type TriggerScheduleDto } from './triggers.dto';

type TriggerRow = typeof triggers.$inferSelect;
export type TriggerViewRow = Pick<
  TriggerRow,
  'id' | 'agentId' | 'connectorId' | 'connectorType' | 'event' | 'isActive' | 'conditions' | 'settings' | 'schedule' | 'createdAt' | 'updatedAt'
>;

/** An ISO string kept in jsonb, re-rendered so every timestamp has one format. */
const isoText = (value: string | null | undefined): string | null => (value ? new Date(value).toISOString() : null);

/** Whitelisted: webhook_id, webhook_status and deactivated_reason are internal (agent cascade bookkeeping). */
export function mapTrigger(row: TriggerViewRow): TriggerDto {
  // schedule is set only for cron.scheduled triggers
  const schedule: TriggerScheduleDto | null =
    row.event === CRON_SCHEDULED_EVENT && row.schedule
      ? {
          cron_expression: row.schedule.cron_expression ?? null,
          interval_hours: row.schedule.interval_hours ?? null,
          next_run_at: isoText(row.schedule.next_run_at),
          last_run_at: isoText(row.schedule.last_run_at),
          last_run_status: row.schedule.last_run_status ?? null,
        }
      : null;
  return {
    id: row.id,
    agent_id: row.agentId,
    connector_id: row.connectorId,
    connector_type: row.connectorType,
    event: row.event,
    is_active: row.isActive,
    conditions: row.conditions ?? null,
    settings: row.settings ?? {},
    schedule,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}
