import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { idPattern } from '../common/input-bounds';
import { TRIGGER_ID } from './triggers.ids';

export const CRON_SCHEDULED_EVENT = 'cron.scheduled';
const CUSTOM_TRIGGER_EVENT = 'svc.custom_trigger';
const CUSTOM_CONNECTOR_TYPE = 'custom';

/** A custom trigger (its connector_id is null): the `svc.custom_trigger` event or the `custom` connector type. */
export function isCustomTrigger(trigger: { event: string; connector_type: string }): boolean {
  return trigger.event === CUSTOM_TRIGGER_EVENT || trigger.connector_type === CUSTOM_CONNECTOR_TYPE;
}

export class TriggerScheduleDto {
  @ApiPropertyOptional({ type: 'string', nullable: true }) cron_expression!: string | null;
  @ApiPropertyOptional({ type: 'integer', nullable: true }) interval_hours!: number | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) next_run_at!: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) last_run_at!: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) last_run_status!: string | null;
}

export class TriggerDto {
  @ApiProperty({ pattern: idPattern(TRIGGER_ID) }) id!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) agent_id?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'null for custom and cron-scheduled triggers' }) connector_id?: string | null;
  @ApiProperty() connector_type!: string;
  @ApiProperty({ description: 'e.g. `ticket.created`, `cron.scheduled`, `svc.custom_trigger`' }) event!: string;
  @ApiProperty({ description: 'false while the agent is inactive or deleted (agent cascade)' }) is_active!: boolean;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true }) conditions?: Record<string, unknown> | null;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) settings?: Record<string, unknown>;
  @ApiPropertyOptional({ type: TriggerScheduleDto, nullable: true, description: 'set only for `cron.scheduled` triggers' })
  schedule?: TriggerScheduleDto | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) updated_at?: string | null;
}
