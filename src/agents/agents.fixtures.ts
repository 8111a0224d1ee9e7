import { Injectable } from '@nestjs/common';
import { IntersectionType, OmitType, PickType } from '@nestjs/swagger';
import { IsInt, IsOptional, Min } from 'class-validator';
import { IsIdOf } from '../common/input-bounds';
import { FixtureError, firstProblem, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { AgentCreateDto, AgentUpdateDto } from './agents.dto';
import { AgentsRepository, type NewAgentRow } from './agents.repository';
import { buildAgentRow } from './agents.rules';
import { CASCADE_REASON } from './agent-cascade.repository';
import { IsDateTime } from '../common/validation';

/**
 * An agent in a fixture: the fields POST /agents takes, with their rules
 * (derived from the request DTOs, so the API and the loader cannot judge a
 * value differently), plus fixture-only fields: what PATCH and the system
 * write (`is_active`, the deactivation pair), what a response shows (`id`,
 * the counts, the timestamps) and `deleted_at`. A response's `null` for
 * `color` and `instructions_html` is taken as "not set".
 */
class AgentFixture extends IntersectionType(
  OmitType(AgentCreateDto, ['instructions_html'] as const),
  PickType(AgentUpdateDto, ['instructions_html', 'is_active', 'deactivated_reason', 'deactivated_at'] as const),
) {
  @IsOptional() @IsIdOf('agent') id?: string;
  /** a response's `color: null`: the default color then (IsOptional beside the DTO's rule lets null through) */
  @IsOptional() override color?: string;
  /** null: a live agent; a time: soft-deleted then (in the trash, purged 30 days later) */
  @IsOptional() @IsDateTime() deleted_at?: string | null;
  /** derived from `tools`: a disagreeing value is an error */
  @IsOptional() @IsInt() @Min(0) tools_count?: number;
  /** derived from `sub_agents`: a disagreeing value is an error */
  @IsOptional() @IsInt() @Min(0) sub_agents_count?: number;
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

/** Fields only a fixture takes, or takes with `null` where POST /agents refuses it (the agreement test skips exactly these). */
const AGENT_FIXTURE_ONLY = ['id', 'color', 'deleted_at', 'tools_count', 'sub_agents_count', 'created_at', 'updated_at', 'instructions_html', 'is_active', 'deactivated_reason', 'deactivated_at'] as const;

/** Kinds under which the agents section declares its inactive and its soft-deleted agents (for the cascade state of triggers and chatbots). */
const INACTIVE_AGENTS = 'agents:inactive';
const DELETED_AGENTS = 'agents:deleted';

/** `deactivated_reason` / `deactivated_at` of a trigger or chatbot in a fixture: the shapes the agent cascade writes. */
export interface CascadeStateFixture {
  agent_id?: string | null;
  is_active?: boolean;
  deactivated_reason?: string | null;
  deactivated_at?: string | null;
}

/**
 * The cascade state of a trigger or chatbot row, checked the way the agent
 * cascade leaves it, so a fixture cannot hold a state the API never would:
 * a reason only on a row that is off; `agent_deactivated` only under an
 * inactive agent (reactivating it then restores the row), `agent_deleted`
 * only under a soft-deleted one. Agents not in this fixture are taken as given.
 */
export function cascadeStateOf(item: CascadeStateFixture, path: string, ctx: FixtureContext): { deactivatedReason: string | null; deactivatedAt: Date | null } {
  const reason = item.deactivated_reason ?? null;
  if (reason !== null) {
    if (item.is_active !== false) throw new FixtureError(`${path}.deactivated_reason`, 'is set only on a row with is_active false');
    const agentId = item.agent_id ?? null;
    const declared = agentId !== null && ctx.declared.get('agents')?.has(agentId);
    if (reason === CASCADE_REASON.agentDeactivated || reason === CASCADE_REASON.agentDeleted) {
      if (agentId === null) throw new FixtureError(`${path}.deactivated_reason`, `${reason} needs the row's agent_id`);
      const deleted = ctx.declared.get(DELETED_AGENTS)?.has(agentId) ?? false;
      const inactive = ctx.declared.get(INACTIVE_AGENTS)?.has(agentId) ?? false;
      if (declared && reason === CASCADE_REASON.agentDeactivated && (deleted || !inactive)) {
        throw new FixtureError(`${path}.deactivated_reason`, `${reason} needs agent ${agentId} to be inactive (is_active false) and not deleted`);
      }
      if (declared && reason === CASCADE_REASON.agentDeleted && !deleted) {
        throw new FixtureError(`${path}.deactivated_reason`, `${reason} needs agent ${agentId} to be soft-deleted (deleted_at set)`);
      }
    }
  } else if (item.deactivated_at !== undefined && item.deactivated_at !== null) {
    throw new FixtureError(`${path}.deactivated_at`, 'is set only together with deactivated_reason');
  }
  return { deactivatedReason: reason, deactivatedAt: item.deactivated_at ? new Date(item.deactivated_at) : null };
}

function requireDeclared(ctx: FixtureContext, kind: string, id: string, path: string): void {
  if (!ctx.declared.get(kind)?.has(id)) throw new FixtureError(path, `${id} is not one of this organization's ${kind}`);
}

/** Section `agents` (order 40): after connectors (20) and sources/custom tools (30), before conversations, triggers and chatbots. */
@Injectable()
export class AgentsFixtureSection extends RegisteredFixtureSection<NewAgentRow[]> {
  constructor(private readonly repository: AgentsRepository) {
    super({
      name: 'agents',
      order: 40,
      demoFile: 'src/agents/agents.demo.json',
      agreesWith: { request: AgentCreateDto, item: AgentFixture, fixtureOnly: AGENT_FIXTURE_ONLY },
    });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): NewAgentRow[] {
    const items: AgentFixture[] = [];
    // the API's own row builder: same defaults, id normalization and rules as POST /agents
    const rows = this.parseRows(AgentFixture, value, path, ctx, (item, at): NewAgentRow => {
      const built = buildAgentRow(ctx.orgId, item);
      if (!built.ok) throw firstProblem(built.fields, at);
      items.push(item);
      return built.value;
    });
    ctx.declared.set(INACTIVE_AGENTS, new Set(rows.filter((row) => row.isActive === false).map((row) => row.id!)));
    ctx.declared.set(DELETED_AGENTS, new Set(rows.filter((row) => row.deletedAt).map((row) => row.id!)));

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
      row.subAgents!.forEach((id, i) => requireDeclared(ctx, 'agents', id, `${at}.sub_agents[${i}]`));
      row.dataSources!.forEach((ref, i) => requireDeclared(ctx, 'sources', ref.source_id, `${at}.data_sources[${i}].source_id`));
    });
    return rows;
  }

  async write(orgId: string, rows: NewAgentRow[], ctx: FixtureContext): Promise<void> {
    await this.writeRows(ctx, rows, 'agent', (batch) => this.repository.upsertMany(orgId, batch));
  }
}
