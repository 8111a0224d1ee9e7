import { Injectable } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsISO8601,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { isId, newId } from '../../libs/ids/ids';
import { BOUNDS, IsBoundedJson } from '../common/input-bounds';
import type { Transaction } from '../database/database.types';
import { declareIds, fixtureDate, FixtureError, FixtureRegistry, parseFixtureArray, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { COLOR_PATTERN, DATA_SOURCE_SCOPES, DEFAULT_AGENT_COLOR, HANDLE_PATTERN, MAX_HANDLE_LENGTH, MAX_NAME_LENGTH } from './agents.dto';
import { AgentsRepository, type NewAgentRow } from './agents.repository';

export class ToolRefFixture {
  @IsString() @IsNotEmpty() @MaxLength(MAX_NAME_LENGTH) name!: string;
  @IsOptional() @IsString() @MaxLength(BOUNDS.id) connector_id?: string | null;
}

export class DataSourceRefFixture {
  @IsString() @IsNotEmpty() @MaxLength(BOUNDS.id) source_id!: string;
  @IsIn(DATA_SOURCE_SCOPES) scope!: 'all' | 'selected';
  @IsOptional() @IsArray() @ArrayMaxSize(BOUNDS.documentsPerSource) @IsString({ each: true }) @MaxLength(BOUNDS.id, { each: true }) documents?: string[];
}

/** An agent in a fixture: the Agent response fields plus what the API takes on create, plus `deleted_at`. */
export class AgentFixture {
  @IsOptional() @Matches(/^agent_[a-f0-9]{24}$/, { message: 'must be agent_<24 lowercase hex>' }) id?: string;
  @IsString() @MaxLength(MAX_HANDLE_LENGTH) @Matches(HANDLE_PATTERN, { message: 'must start with a letter and contain only letters and digits' }) handle!: string;
  @IsString() @IsNotEmpty() @MaxLength(MAX_NAME_LENGTH) name!: string;
  @ValidateIf((o: AgentFixture) => o.instructions_html === undefined || o.instructions_html === null || o.instructions !== undefined)
  @IsString({ message: 'is required unless instructions_html is given' })
  @MaxLength(BOUNDS.instructions)
  instructions?: string;
  @IsOptional() @IsString() @MaxLength(BOUNDS.instructions) instructions_html?: string | null;
  @IsOptional() @IsString() @MaxLength(BOUNDS.agentDescription) description?: string | null;
  @IsOptional() @IsString() @MaxLength(BOUNDS.name) model?: string | null;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @Matches(COLOR_PATTERN, { message: 'must be a hex color such as #rrggbb' }) color?: string | null;
  @IsOptional() @IsString() @MaxLength(BOUNDS.url) avatar?: string | null;
  @IsOptional() @IsBoolean() include_system_prompt?: boolean;
  @IsOptional() @IsArray() @ArrayMaxSize(BOUNDS.agentTools) @ValidateNested({ each: true }) @Type(() => ToolRefFixture) tools?: ToolRefFixture[];
  @IsOptional() @IsArray() @ArrayMaxSize(BOUNDS.agentRefs) @IsString({ each: true }) @MaxLength(BOUNDS.id, { each: true }) connectors?: string[];
  @IsOptional() @IsArray() @ArrayMaxSize(BOUNDS.agentRefs) @IsString({ each: true }) @MaxLength(BOUNDS.id, { each: true }) sub_agents?: string[];
  @IsOptional() @IsArray() @ArrayMaxSize(BOUNDS.agentRefs) @ValidateNested({ each: true }) @Type(() => DataSourceRefFixture) data_sources?: DataSourceRefFixture[];
  @IsOptional() @IsObject() @IsBoundedJson() pending_trigger_hint?: Record<string, unknown> | null;
  @IsOptional() @IsString() @MaxLength(BOUNDS.deactivatedReason) deactivated_reason?: string | null;
  @IsOptional() @IsISO8601() deactivated_at?: string | null;
  /** null: a live agent; a time: soft-deleted then (in the trash, purged 30 days later) */
  @IsOptional() @IsISO8601() deleted_at?: string | null;
  /** derived from `tools`: a disagreeing value is an error */
  @IsOptional() @IsInt() @Min(0) tools_count?: number;
  /** derived from `sub_agents`: a disagreeing value is an error */
  @IsOptional() @IsInt() @Min(0) sub_agents_count?: number;
  @IsOptional() @IsISO8601() created_at?: string | null;
  @IsOptional() @IsISO8601() updated_at?: string | null;
}

function requireDeclared(ctx: FixtureContext, kind: string, id: string, path: string): void {
  if (!ctx.declared.get(kind)?.has(id)) throw new FixtureError(path, `${id} is not one of this organization's ${kind}`);
}

/** Section `agents` (order 40): after connectors (20) and sources/custom tools (30), before conversations, triggers and chatbots. */
@Injectable()
export class AgentsFixtureSection extends RegisteredFixtureSection<NewAgentRow[]> {
  readonly name = 'agents';
  readonly order = 40;
  readonly demoFile = 'src/agents/agents.demo.json';

  constructor(
    registry: FixtureRegistry,
    private readonly repository: AgentsRepository,
  ) {
    super(registry);
  }

  parse(value: unknown, path: string, ctx: FixtureContext): NewAgentRow[] {
    const items = parseFixtureArray(AgentFixture, value, path);
    const rows = items.map((item): NewAgentRow => {
      const createdAt = fixtureDate(item.created_at) ?? undefined;
      return {
        id: item.id ?? newId('agent', createdAt),
        orgId: ctx.orgId,
        handle: item.handle,
        name: item.name,
        description: item.description ?? null,
        model: item.model ?? null,
        instructions: item.instructions ?? null,
        instructionsHtml: item.instructions_html ?? null,
        isActive: item.is_active ?? true,
        color: item.color === undefined ? DEFAULT_AGENT_COLOR : item.color,
        avatar: item.avatar ?? null,
        includeSystemPrompt: item.include_system_prompt ?? true,
        tools: (item.tools ?? []).map((tool) => ({ name: tool.name, connector_id: tool.connector_id ?? null })),
        connectors: item.connectors ?? [],
        subAgents: item.sub_agents ?? [],
        dataSources: (item.data_sources ?? []).map((ref) => ({ source_id: ref.source_id, scope: ref.scope, ...(ref.documents ? { documents: ref.documents } : {}) })),
        pendingTriggerHint: item.pending_trigger_hint ?? null,
        deactivatedReason: item.deactivated_reason ?? null,
        deactivatedAt: fixtureDate(item.deactivated_at),
        deletedAt: fixtureDate(item.deleted_at),
        ...(createdAt ? { createdAt } : {}),
        ...(item.updated_at ? { updatedAt: new Date(item.updated_at) } : createdAt ? { updatedAt: createdAt } : {}),
      };
    });
    declareIds(ctx, 'agents', rows.map((row) => row.id), path);

    const liveHandles = new Map<string, number>();
    rows.forEach((row, index) => {
      const at = `${path}[${index}]`;
      const item = items[index];
      if (item.tools_count !== undefined && item.tools_count !== row.tools!.length) {
        throw new FixtureError(`${at}.tools_count`, `is ${item.tools_count} but tools has ${row.tools!.length} entries`);
      }
      if (item.sub_agents_count !== undefined && item.sub_agents_count !== row.subAgents!.length) {
        throw new FixtureError(`${at}.sub_agents_count`, `is ${item.sub_agents_count} but sub_agents has ${row.subAgents!.length} entries`);
      }
      if (!row.deletedAt) {
        const key = row.handle.toLowerCase();
        if (liveHandles.has(key)) throw new FixtureError(`${at}.handle`, `duplicates the handle of ${path}[${liveHandles.get(key)}] (compared case-insensitively)`);
        liveHandles.set(key, index);
      }
      row.connectors!.forEach((id, i) => requireDeclared(ctx, 'connectors', id, `${at}.connectors[${i}]`));
      row.tools!.forEach((tool, i) => {
        if (tool.connector_id) requireDeclared(ctx, 'connectors', tool.connector_id, `${at}.tools[${i}].connector_id`);
      });
      row.subAgents!.forEach((id, i) => {
        if (id === row.id) throw new FixtureError(`${at}.sub_agents[${i}]`, 'an agent may not reference itself');
        if (!isId('agent', id)) throw new FixtureError(`${at}.sub_agents[${i}]`, 'must be agent_<24 lowercase hex>');
        requireDeclared(ctx, 'agents', id, `${at}.sub_agents[${i}]`);
      });
      row.dataSources!.forEach((ref, i) => requireDeclared(ctx, 'sources', ref.source_id, `${at}.data_sources[${i}].source_id`));
    });
    return rows;
  }

  async write(tx: Transaction, orgId: string, rows: NewAgentRow[], ctx: FixtureContext): Promise<void> {
    this.requireAllWritten(rows, await this.repository.upsertMany(orgId, rows, tx), 'agent', (i) => this.itemPath(ctx, i));
  }
}
