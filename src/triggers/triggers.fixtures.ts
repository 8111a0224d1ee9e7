import { Injectable } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, MaxLength, Min, ValidateNested } from 'class-validator';
import { newId } from '../../libs/ids/ids';
import { cascadeStateOf } from '../agents/agents.fixtures';
import { BOUNDS } from '../common/input-bounds';
import { fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { CRON_SCHEDULED_EVENT, isCustomTrigger } from './triggers.dto';
import { TriggersRepository, type NewTriggerRow } from './triggers.repository';
import { IsIdOf } from '../common/input-bounds';
import { IsDateTime } from '../common/validation';
import { TRIGGER_ID } from './triggers.ids';

class TriggerScheduleFixture {
  @IsOptional() @IsString() @MaxLength(200) cron_expression?: string | null;
  @IsOptional() @IsInt() @Min(1) interval_hours?: number | null;
  @IsOptional() @IsDateTime() next_run_at?: string | null;
  @IsOptional() @IsDateTime() last_run_at?: string | null;
  @IsOptional() @IsString() @MaxLength(100) last_run_status?: string | null;
}

class TriggerFixture {
  @IsOptional() @IsIdOf(TRIGGER_ID) id?: string;
  @IsOptional() @IsIdOf('agent') agent_id?: string | null;
  @IsOptional() @IsIdOf('connector') connector_id?: string | null;
  @IsString() @IsNotEmpty() @MaxLength(100) connector_type!: string;
  @IsString() @IsNotEmpty() @MaxLength(200) event!: string;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @IsObject() conditions?: Record<string, unknown> | null;
  @IsOptional() @IsObject() settings?: Record<string, unknown>;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => TriggerScheduleFixture) schedule?: TriggerScheduleFixture | null;
  /** internal, never returned: the webhook registered with the third-party tool */
  @IsOptional() @IsString() @MaxLength(200) webhook_id?: string | null;
  @IsOptional() @IsIn(['active', 'paused', 'torn_down']) webhook_status?: string | null;
  /** set by the agent cascade (see the agents section): `agent_deactivated` rows come back when their agent is reactivated */
  @IsOptional() @IsString() @MaxLength(BOUNDS.deactivatedReason) deactivated_reason?: string | null;
  @IsOptional() @IsDateTime() deactivated_at?: string | null;
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

const iso = (value: string | null | undefined): string | null => (value ? new Date(value).toISOString() : null);

@Injectable()
export class TriggersFixtureSection extends RegisteredFixtureSection<NewTriggerRow[]> {
  constructor(private readonly repository: TriggersRepository) {
    super({ name: 'triggers', order: 60, demoFile: 'src/triggers/triggers.demo.json' });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): NewTriggerRow[] {
    const connectors = ctx.declared.get('connectors');
    return this.parseRows(TriggerFixture, value, path, ctx, (item, here): NewTriggerRow => {
      const isCron = item.event === CRON_SCHEDULED_EVENT;
      if (item.schedule && !isCron) throw new FixtureError(`${here}.schedule`, `is set only for ${CRON_SCHEDULED_EVENT} triggers`);
      if (isCron && item.connector_id) throw new FixtureError(`${here}.connector_id`, `must be null for ${CRON_SCHEDULED_EVENT} triggers`);
      if (isCustomTrigger(item) && item.connector_id) throw new FixtureError(`${here}.connector_id`, 'must be null for custom triggers');
      // connectors declared in this fixture are checked; ids of connectors already stored are taken as given
      if (item.connector_id && connectors?.size && !connectors.has(item.connector_id)) {
        throw new FixtureError(`${here}.connector_id`, `unknown connector ${item.connector_id}`);
      }
      const createdAt = fixtureDate(item.created_at) ?? new Date();
      const schedule = item.schedule
        ? {
            cron_expression: item.schedule.cron_expression ?? null,
            interval_hours: item.schedule.interval_hours ?? null,
            next_run_at: iso(item.schedule.next_run_at),
            last_run_at: iso(item.schedule.last_run_at),
            last_run_status: item.schedule.last_run_status ?? null,
          }
        : null;
      return {
        id: item.id ?? newId(TRIGGER_ID, createdAt),
        orgId: ctx.orgId,
        agentId: item.agent_id ?? null,
        connectorId: item.connector_id ?? null,
        connectorType: item.connector_type,
        event: item.event,
        isActive: item.is_active ?? true,
        conditions: item.conditions ?? null,
        settings: item.settings ?? {},
        schedule,
        webhookId: item.webhook_id ?? null,
        webhookStatus: item.webhook_status ?? null,
        ...cascadeStateOf(item, here, ctx),
        createdAt,
        updatedAt: fixtureDate(item.updated_at) ?? createdAt,
      };
    });
  }

  async write(orgId: string, rows: NewTriggerRow[], ctx: FixtureContext): Promise<void> {
    await this.writeRows(ctx, rows, 'trigger', (batch) => this.repository.upsertMany(orgId, batch));
  }
}
