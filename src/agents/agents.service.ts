import { Inject, Injectable } from '@nestjs/common';
import { newId, parseId } from '../../libs/ids/ids';
import { ApiError, ErrorCode, type FieldErrors } from '../common/api-error';
import { uniqueViolationConstraint } from '../database/database-errors';
import type { Page } from '../common/envelope';
import { LOGGER, type AppLogger } from '../common/logger';
import { Paginator, type PaginationQuery } from '../common/pagination';
import { DatabaseConnection } from '../database/connection';
import type { DataSourceRefRow, ToolRefRow } from '../database/schema';
import { AgentCascadeRepository } from './agent-cascade.repository';
import { AgentReferencesRepository } from './agent-references.repository';
import {
  CUSTOM_TOOL_PREFIX,
  DEFAULT_AGENT_COLOR,
  type AgentCreateDto,
  type AgentDeletedDto,
  type AgentDto,
  type AgentUpdateDto,
  type DataSourceRefDto,
  type ToolRefDto,
} from './agents.dto';
import { mapAgent, mapAgentDeleted, type AgentRow } from './agents.mapper';
import { OrgsRepository } from '../orgs/orgs.repository';
import { AgentsRepository, type AgentChanges, type NewAgentRow } from './agents.repository';

export const HANDLE_UNIQUE_CONSTRAINT = 'agents_org_handle_unique';
/** what the agent's own `deactivated_reason` says after a client's PATCH `is_active: false` */
export const MANUAL_DEACTIVATION_REASON = 'manual';
export const AUTH_FAILED = 'auth_failed';

/** The reference fields as a body (or a fixture) gives them. */
type AgentReferenceFields = Pick<AgentCreateDto, 'tools' | 'connectors' | 'sub_agents' | 'data_sources'>;

/**
 * What an agent row is built from: the AgentCreate fields, plus the stored
 * state that only the fixture loader may give (the API sets it itself).
 */
export interface AgentRowInput extends AgentReferenceFields {
  handle: string;
  name: string;
  instructions?: string | null;
  instructions_html?: string | null;
  description?: string | null;
  model?: string | null;
  color?: string | null;
  avatar?: string | null;
  include_system_prompt?: boolean;
  pending_trigger_hint?: Record<string, unknown> | null;
  id?: string;
  is_active?: boolean;
  deactivated_reason?: string | null;
  deactivated_at?: string | null;
  deleted_at?: string | null;
  created_at?: string | null;
  updated_at?: string | null;
}

const toDate = (value: string | null | undefined): Date | null => (value === undefined || value === null ? null : new Date(value));

/**
 * The one place a new agent row is built, for POST /agents and for the
 * fixture loader alike: the defaults of AgentCreate, the reference ids
 * normalized and checked for format and duplicates, no self-reference, and
 * instructions or instructions_html present. Problems are collected by
 * field (the API answers them all in one 422; the loader names the first).
 * Checks against other rows (references exist, plan caps, unique handle)
 * stay with the caller, which knows where the other rows are.
 */
export function buildAgentRow(orgId: string, input: AgentRowInput): { row: NewAgentRow; refs: NormalizedRefs; problems: FieldErrors } {
  const problems: FieldErrors = {};
  const refs = normalizeReferences(input, problems);
  const createdAt = toDate(input.created_at) ?? undefined;
  const id = input.id ?? newId('agent', createdAt);
  refs.subAgents?.forEach((subAgentId, index) => {
    if (subAgentId === id) addError(problems, `sub_agents[${index}]`, 'an agent may not reference itself');
  });
  if ((input.instructions ?? null) === null && (input.instructions_html ?? null) === null) {
    addError(problems, 'instructions', 'is required unless instructions_html is provided');
  }
  const row: NewAgentRow = {
    id,
    orgId,
    handle: input.handle,
    name: input.name,
    description: input.description ?? null,
    model: input.model ?? null,
    instructions: input.instructions ?? null,
    instructionsHtml: input.instructions_html ?? null,
    isActive: input.is_active ?? true,
    color: input.color === undefined ? DEFAULT_AGENT_COLOR : input.color,
    avatar: input.avatar ?? null,
    includeSystemPrompt: input.include_system_prompt ?? true,
    tools: refs.tools ?? [],
    connectors: refs.connectors ?? [],
    subAgents: refs.subAgents ?? [],
    dataSources: refs.dataSources ?? [],
    pendingTriggerHint: input.pending_trigger_hint ?? null,
    deactivatedReason: input.deactivated_reason ?? null,
    deactivatedAt: toDate(input.deactivated_at),
    deletedAt: toDate(input.deleted_at),
    ...(createdAt ? { createdAt, updatedAt: toDate(input.updated_at) ?? createdAt } : input.updated_at ? { updatedAt: new Date(input.updated_at) } : {}),
  };
  return { row, refs, problems };
}

/** Reference fields of a request body, with ids normalized to their prefixed form. */
interface NormalizedRefs {
  tools?: ToolRefRow[];
  connectors?: string[];
  subAgents?: string[];
  dataSources?: DataSourceRefRow[];
}

export function customToolCount(tools: ReadonlyArray<{ name: string }>): number {
  return tools.filter((tool) => tool.name.startsWith(CUSTOM_TOOL_PREFIX)).length;
}

/** Every connector an agent is assigned: `connectors` plus each `tools[].connector_id`. */
export function assignedConnectorIds(connectors: readonly string[], tools: readonly ToolRefRow[]): string[] {
  const ids = new Set(connectors);
  for (const tool of tools) if (tool.connector_id) ids.add(tool.connector_id);
  return [...ids];
}

function addError(fields: FieldErrors, field: string, problem: string): void {
  (fields[field] ??= []).push(problem);
}

/**
 * Checks the shape of the reference fields that need more than class-validator:
 * id formats (bare 24-hex accepted for connectors and agents, as in paths) and
 * duplicates. Collects every problem, so one 422 names every bad field.
 */
function normalizeReferences(dto: AgentReferenceFields, fields: FieldErrors): NormalizedRefs {
  const refs: NormalizedRefs = {};
  if (dto.tools !== undefined) {
    const seen = new Map<string, number>();
    refs.tools = dto.tools.map((tool: ToolRefDto, index) => {
      let connectorId: string | null = null;
      if (tool.connector_id !== undefined && tool.connector_id !== null) {
        connectorId = parseId('connector', tool.connector_id, { allowBare: true });
        if (!connectorId) addError(fields, `tools[${index}].connector_id`, 'is not a connector id');
      }
      const key = `${tool.name}\u0000${connectorId ?? tool.connector_id ?? ''}`;
      const first = seen.get(key);
      if (first !== undefined) addError(fields, `tools[${index}]`, `duplicates tools[${first}]`);
      else seen.set(key, index);
      return { name: tool.name, connector_id: connectorId };
    });
  }
  if (dto.connectors !== undefined) refs.connectors = normalizeIdList(dto.connectors, 'connectors', 'connector', fields);
  if (dto.sub_agents !== undefined) refs.subAgents = normalizeIdList(dto.sub_agents, 'sub_agents', 'agent', fields);
  if (dto.data_sources !== undefined) {
    const seen = new Map<string, number>();
    refs.dataSources = dto.data_sources.map((ref: DataSourceRefDto, index) => {
      const path = `data_sources[${index}]`;
      const sourceId = parseId('source', ref.source_id);
      if (!sourceId) addError(fields, `${path}.source_id`, 'is not a source id');
      else if (seen.has(sourceId)) addError(fields, `${path}.source_id`, `duplicates data_sources[${seen.get(sourceId)}]`);
      else seen.set(sourceId, index);
      const row: DataSourceRefRow = { source_id: sourceId ?? ref.source_id, scope: ref.scope };
      if (ref.documents !== undefined) {
        if (ref.scope !== 'selected' && ref.documents.length > 0) {
          addError(fields, `${path}.documents`, 'is only allowed when scope is selected');
        }
        const documents = ref.documents.map((value, docIndex) => {
          const documentId = parseId('document', value);
          if (!documentId) addError(fields, `${path}.documents[${docIndex}]`, 'is not a document id');
          return documentId ?? value;
        });
        if (new Set(documents).size !== documents.length) addError(fields, `${path}.documents`, 'lists a document more than once');
        row.documents = documents;
      }
      return row;
    });
  }
  return refs;
}

function normalizeIdList(values: string[], field: string, kind: 'connector' | 'agent', fields: FieldErrors): string[] {
  const seen = new Map<string, number>();
  return values.map((value, index) => {
    const id = parseId(kind, value, { allowBare: true });
    if (!id) {
      addError(fields, `${field}[${index}]`, `is not ${kind === 'agent' ? 'an agent' : 'a connector'} id`);
      return value;
    }
    if (seen.has(id)) addError(fields, `${field}[${index}]`, `duplicates ${field}[${seen.get(id)}]`);
    else seen.set(id, index);
    return id;
  });
}

@Injectable()
export class AgentsService {
  constructor(
    private readonly connection: DatabaseConnection,
    private readonly repository: AgentsRepository,
    private readonly orgs: OrgsRepository,
    private readonly references: AgentReferencesRepository,
    private readonly cascade: AgentCascadeRepository,
    private readonly paginator: Paginator,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async listAgents(orgId: string, query: PaginationQuery): Promise<Page<AgentDto>> {
    const request = this.paginator.pageRequest(query, { cursorNamespace: 'agents' });
    const rows = await this.repository.listLive(orgId, request);
    return this.paginator.page(rows, request).map(mapAgent);
  }

  async getAgent(orgId: string, rawId: string): Promise<AgentDto> {
    const row = await this.repository.findLive(orgId, this.agentId(rawId));
    if (!row) throw agentNotFound();
    return mapAgent(row);
  }

  async createAgent(orgId: string, dto: AgentCreateDto): Promise<AgentDto> {
    // stored state (is_active, deactivation, timestamps) is never taken from a request body
    const { row: newRow, refs, problems } = buildAgentRow(orgId, {
      handle: dto.handle,
      name: dto.name,
      instructions: dto.instructions,
      instructions_html: dto.instructions_html,
      description: dto.description,
      model: dto.model,
      color: dto.color,
      avatar: dto.avatar,
      include_system_prompt: dto.include_system_prompt,
      pending_trigger_hint: dto.pending_trigger_hint,
      tools: dto.tools,
      connectors: dto.connectors,
      sub_agents: dto.sub_agents,
      data_sources: dto.data_sources,
    });
    if (Object.keys(problems).length > 0) throw ApiError.validation(problems);
    const tools = refs.tools ?? [];
    const row = await this.withHandleConflict(() =>
      this.connection.transaction(async () => {
        // the org row lock queues concurrent creates of one organization, so the cap holds
        const limits = await this.orgs.lockLimits(orgId);
        const maxAgents = limits?.agents ?? null;
        if (maxAgents !== null && (await this.repository.countLive(orgId)) >= maxAgents) {
          throw new ApiError(
            ErrorCode.ValidationFailed,
            `Plan limit reached: limits.agents allows ${maxAgents} agent${maxAgents === 1 ? '' : 's'} in this organization.`,
            { limit: 'agents', max: maxAgents },
          );
        }
        this.checkCustomToolSlots(tools, 0, limits?.custom_tool_slots ?? null);
        await this.checkReferences(orgId, refs, { currentSubAgents: [] });
        return this.repository.insert(orgId, newRow);
      }),
    );
    return mapAgent(row);
  }

  async updateAgent(orgId: string, rawId: string, dto: AgentUpdateDto): Promise<AgentDto> {
    const id = this.agentId(rawId);
    const fields: FieldErrors = {};
    const refs = normalizeReferences(dto, fields);
    refs.subAgents?.forEach((subAgentId, index) => {
      if (subAgentId === id) addError(fields, `sub_agents[${index}]`, 'an agent may not reference itself');
    });
    if (Object.keys(fields).length > 0) throw ApiError.validation(fields);

    if (isPlainUpdate(dto)) {
      // nothing to check against the current row, no cascade: one UPDATE … RETURNING
      // instead of BEGIN, SELECT … FOR UPDATE, UPDATE, COMMIT. The statement is
      // atomic on its own; a concurrent PATCH or DELETE holding the row lock makes
      // it wait, and it then re-checks `deleted_at IS NULL` (404 if trashed).
      const changes = this.changesOf(dto, refs);
      if (Object.keys(changes).length > 0) {
        const updated = await this.withHandleConflict(() => this.repository.update(orgId, id, { ...changes, updatedAt: new Date() }));
        if (!updated) throw agentNotFound();
        return mapAgent(updated);
      }
    }

    const row = await this.withHandleConflict(() =>
      this.connection.transaction(async () => {
        // locked until commit: concurrent PATCH/DELETE of this agent (and their cascades) run one after the other
        const current = await this.repository.lockLive(orgId, id);
        if (!current) throw agentNotFound();
        const now = new Date();
        const changes = this.changesOf(dto, refs);
        const final = { ...current, ...changes } as AgentRow;

        if (final.instructions === null && final.instructionsHtml === null) {
          throw ApiError.field(dto.instructions === null ? 'instructions' : 'instructions_html', 'an agent needs instructions or instructions_html');
        }
        if (refs.tools !== undefined) {
          const org = await this.orgs.findById(orgId);
          this.checkCustomToolSlots(refs.tools, customToolCount(current.tools), org?.limits?.custom_tool_slots ?? null);
        }

        const activating = dto.is_active === true && !current.isActive;
        const deactivating = dto.is_active === false && current.isActive;
        const finalConnectorIds = activating ? assignedConnectorIds(final.connectors, final.tools) : [];
        const connectors = await this.checkReferences(orgId, refs, { currentSubAgents: current.subAgents, alsoConnectors: finalConnectorIds });
        if (activating) {
          // activation is refused while an assigned connector needs reconnecting; nothing changes
          const broken = finalConnectorIds.map((connectorId) => connectors.get(connectorId)).filter((c) => c?.status === AUTH_FAILED);
          if (broken.length > 0) {
            const names = broken.map((c) => `${c!.id} ("${c!.name}")`).join(', ');
            throw new ApiError(
              ErrorCode.ValidationFailed,
              `The agent cannot be activated: connector ${names} has status auth_failed; reconnect it first.`,
              { fields: { is_active: [`connector ${names} has status auth_failed`] }, connector_ids: broken.map((c) => c!.id) },
            );
          }
        }
        if (deactivating) {
          changes.deactivatedReason = dto.deactivated_reason !== undefined ? dto.deactivated_reason : MANUAL_DEACTIVATION_REASON;
          changes.deactivatedAt = dto.deactivated_at !== undefined ? changes.deactivatedAt : now;
        } else if (activating) {
          changes.deactivatedReason = dto.deactivated_reason !== undefined ? dto.deactivated_reason : null;
          changes.deactivatedAt = dto.deactivated_at !== undefined ? changes.deactivatedAt : null;
        }

        if (Object.keys(changes).length === 0) return current;
        const updated = await this.repository.update(orgId, id, { ...changes, updatedAt: now });
        if (deactivating) {
          const paused = await this.cascade.pauseForAgentDeactivation(orgId, id, now);
          this.logger.info({ org_id: orgId, agent_id: id, triggers: paused.triggers.length, chatbots: paused.chatbots.length }, 'agent deactivated');
        } else if (activating) {
          const resumed = await this.cascade.resumeAfterAgentActivation(orgId, id, now);
          this.logger.info({ org_id: orgId, agent_id: id, triggers: resumed.triggers.length, chatbots: resumed.chatbots.length }, 'agent activated');
        }
        return updated;
      }),
    );
    return mapAgent(row);
  }

  async deleteAgent(orgId: string, rawId: string): Promise<AgentDeletedDto> {
    const id = this.agentId(rawId);
    await this.connection.transaction(async () => {
      const current = await this.repository.lockLive(orgId, id);
      if (!current) throw agentNotFound();
      const now = new Date();
      await this.repository.softDelete(orgId, id, now);
      const torn = await this.cascade.tearDownForAgentDeletion(orgId, id, now);
      this.logger.info({ org_id: orgId, agent_id: id, triggers: torn.triggers.length, chatbots: torn.chatbots.length }, 'agent moved to trash');
    });
    return mapAgentDeleted(id);
  }

  private agentId(rawId: string): string {
    const id = parseId('agent', rawId, { allowBare: true });
    if (!id) throw agentNotFound();
    return id;
  }

  /** Column changes of a PATCH: omitted fields are absent, `null` clears a nullable field. */
  private changesOf(dto: AgentUpdateDto, refs: NormalizedRefs): AgentChanges {
    const changes: AgentChanges = {};
    if (dto.handle !== undefined) changes.handle = dto.handle;
    if (dto.name !== undefined) changes.name = dto.name;
    if (dto.description !== undefined) changes.description = dto.description;
    if (dto.model !== undefined) changes.model = dto.model;
    if (dto.instructions !== undefined) changes.instructions = dto.instructions;
    if (dto.instructions_html !== undefined) changes.instructionsHtml = dto.instructions_html;
    if (dto.color !== undefined) changes.color = dto.color;
    if (dto.avatar !== undefined) changes.avatar = dto.avatar;
    if (dto.include_system_prompt !== undefined) changes.includeSystemPrompt = dto.include_system_prompt;
    if (dto.pending_trigger_hint !== undefined) changes.pendingTriggerHint = dto.pending_trigger_hint;
    if (dto.is_active !== undefined) changes.isActive = dto.is_active;
    if (dto.deactivated_reason !== undefined) changes.deactivatedReason = dto.deactivated_reason;
    if (dto.deactivated_at !== undefined) changes.deactivatedAt = dto.deactivated_at === null ? null : new Date(dto.deactivated_at);
    if (refs.tools !== undefined) changes.tools = refs.tools;
    if (refs.connectors !== undefined) changes.connectors = refs.connectors;
    if (refs.subAgents !== undefined) changes.subAgents = refs.subAgents;
    if (refs.dataSources !== undefined) changes.dataSources = refs.dataSources;
    return changes;
  }

  /**
   * Exceeding the custom tool cap on an agent update returns 422. An
   * agent already over a lowered cap may still shrink: only a count above the
   * cap that is also above the agent's current count is refused.
   */
  private checkCustomToolSlots(tools: readonly ToolRefRow[], currentCount: number, slots: number | null): void {
    if (slots === null) return;
    const wanted = customToolCount(tools);
    if (wanted > slots && wanted > currentCount) {
      throw ApiError.validation(
        { tools: [`has ${wanted} custom tools; the plan allows ${slots}`] },
        `Plan limit reached: limits.custom_tool_slots allows ${slots} custom tool${slots === 1 ? '' : 's'} per agent; the request gives ${wanted}.`,
      );
    }
  }

  /**
   * Every referenced id must exist in the caller's organization: one query per
   * referenced table. Sub-agents must be live, except ids the agent already
   * lists (a trashed sub-agent stays listed until the purge removes it, and a
   * client re-sending the list it read must not be refused for it).
   * Returns the connectors it read, by id (the activation guard reuses them).
   */
  private async checkReferences(
    orgId: string,
    refs: NormalizedRefs,
    options: { currentSubAgents: readonly string[]; alsoConnectors?: readonly string[] },
  ): Promise<Map<string, { id: string; name: string; status: string }>> {
    const fields: FieldErrors = {};
    const connectorIds = new Set<string>(options.alsoConnectors ?? []);
    refs.connectors?.forEach((id) => connectorIds.add(id));
    refs.tools?.forEach((tool) => tool.connector_id && connectorIds.add(tool.connector_id));
    const documentIds = (refs.dataSources ?? []).flatMap((ref) => ref.documents ?? []);

    // sequential: one transaction is one connection
    const connectorRows = await this.references.connectors(orgId, [...connectorIds]);
    const agentRows = await this.references.agents(orgId, refs.subAgents ?? []);
    const sourceIds = await this.references.sources(orgId, (refs.dataSources ?? []).map((ref) => ref.source_id));
    const documentRows = await this.references.documents(orgId, documentIds);
    const connectors = new Map(connectorRows.map((row) => [row.id, row]));
    refs.connectors?.forEach((id, index) => {
      if (!connectors.has(id)) addError(fields, `connectors[${index}]`, 'no such connector in this organization');
    });
    refs.tools?.forEach((tool, index) => {
      if (tool.connector_id && !connectors.has(tool.connector_id)) {
        addError(fields, `tools[${index}].connector_id`, 'no such connector in this organization');
      }
    });
    const agents = new Map(agentRows.map((row) => [row.id, row]));
    const kept = new Set(options.currentSubAgents);
    refs.subAgents?.forEach((id, index) => {
      const agent = agents.get(id);
      if (!agent || (agent.deletedAt !== null && !kept.has(id))) addError(fields, `sub_agents[${index}]`, 'no such agent in this organization');
    });
    const sources = new Set(sourceIds);
    const documents = new Map(documentRows.map((row) => [row.id, row.sourceId]));
    refs.dataSources?.forEach((ref, index) => {
      if (!sources.has(ref.source_id)) {
        addError(fields, `data_sources[${index}].source_id`, 'no such source in this organization');
        return;
      }
      ref.documents?.forEach((documentId, docIndex) => {
        if (documents.get(documentId) !== ref.source_id) {
          addError(fields, `data_sources[${index}].documents[${docIndex}]`, 'no such document in this source');
        }
      });
    });
    if (Object.keys(fields).length > 0) throw ApiError.validation(fields);
    return connectors;
  }

  /** The partial unique index on (org_id, lower(handle)) of live agents is the guarantee; this names its violation. */
  private async withHandleConflict<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (uniqueViolationConstraint(error) === HANDLE_UNIQUE_CONSTRAINT) {
        throw new ApiError(ErrorCode.AgentHandleTaken, 'An agent with this handle already exists in the organization (handles are compared case-insensitively).', {
          fields: { handle: ['is taken'] },
        });
      }
      throw error;
    }
  }
}

/**
 * A PATCH of plain fields only: no reference lists (checked against other
 * tables and the plan's caps), no `is_active` (activation guard, cascades),
 * and no `instructions`/`instructions_html` set to null (refused when the
 * other one is null too, which needs the current row). Any of those takes
 * the locked transaction.
 */
export function isPlainUpdate(dto: AgentUpdateDto): boolean {
  return (
    dto.tools === undefined &&
    dto.connectors === undefined &&
    dto.sub_agents === undefined &&
    dto.data_sources === undefined &&
    dto.is_active === undefined &&
    dto.instructions !== null &&
    dto.instructions_html !== null
  );
}

export function agentNotFound(): ApiError {
  return new ApiError(ErrorCode.AgentNotFound, 'Agent not found.');
}
