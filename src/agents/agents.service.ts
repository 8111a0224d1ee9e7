import { Inject, Injectable } from '@nestjs/common';
import { parseId } from '../../libs/ids/ids';
import { accepted, ApiError, ErrorCode, type FieldErrors } from '../common/api-error';
import { uniqueViolationConstraint } from '../database/database-errors';
import type { Page } from '../common/envelope';
import { LOGGER, type AppLogger } from '../common/logger';
import { Paginator, type PaginationQuery } from '../common/pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { AgentCascadeRepository } from './agent-cascade.repository';
import { AgentReferencesRepository } from './agent-references.repository';
import type { DeleteAcknowledgementDto } from '../common/delete-ack.dto';
import type { AgentCreateDto, AgentDto, AgentUpdateDto } from './agents.dto';
import { mapAgent, type AgentRow } from './agents.mapper';
import { OrgsRepository } from '../orgs/orgs.repository';
import { AgentsRepository } from './agents.repository';
import {
  activationTransition,
  assignedConnectorIds,
  buildAgentRow,
  changesOf,
  checkActivationAllowed,
  checkCustomToolSlots,
  checkInstructionsKept,
  customToolCount,
  isPlainUpdate,
  referencesOf,
  withActivationState,
  type NormalizedRefs,
} from './agents.rules';
import { checkCountCap } from '../orgs/plan-limits';
import { addFieldError, hasFieldErrors } from '../common/field-errors';
import type { LockedRepresentation } from '../conditional/conditional.decorators';

const HANDLE_UNIQUE_CONSTRAINT = 'agents_org_handle_unique';

@Injectable()
export class AgentsService implements LockedRepresentation {
  constructor(
    private readonly txHost: TransactionHost<DatabaseTransactions>,
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
    if (!row) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
    return mapAgent(row);
  }

  /** The agent as GET answers it, locked until the transaction ends (If-Match on PATCH and DELETE). */
  async lockedRepresentation(orgId: string, rawId: string): Promise<AgentDto | null> {
    const id = parseId('agent', rawId, { allowBare: true });
    const row = id ? await this.repository.lockLive(orgId, id) : null;
    return row ? mapAgent(row) : null;
  }

  async createAgent(orgId: string, dto: AgentCreateDto): Promise<AgentDto> {
    // stored state (is_active, deactivation, timestamps) is never taken from a request body
    const built = buildAgentRow(orgId, {
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
    const { value: newRow, refs } = accepted(built);
    const tools = refs.tools ?? [];
    const row = await this.withHandleConflict(() =>
      this.txHost.withTransaction(async () => {
        // the org row lock queues concurrent creates of one organization, so the cap holds
        const limits = await this.orgs.lockLimits(orgId);
        await checkCountCap('agents', limits?.agents, () => this.repository.countLive(orgId), 'live agents');
        accepted(checkCustomToolSlots(tools, 0, limits?.custom_tool_slots));
        await this.checkReferences(orgId, refs, { currentSubAgents: [] });
        return this.repository.insert(orgId, newRow);
      }),
    );
    return mapAgent(row);
  }

  async updateAgent(orgId: string, rawId: string, dto: AgentUpdateDto): Promise<AgentDto> {
    const id = this.agentId(rawId);
    const refs = accepted(referencesOf(id, dto)).value;

    if (isPlainUpdate(dto)) {
      // nothing to check against the current row, no cascade: one UPDATE … RETURNING
      // instead of BEGIN, SELECT … FOR UPDATE, UPDATE, COMMIT. The statement is
      // atomic on its own; a concurrent PATCH or DELETE holding the row lock makes
      // it wait, and it then re-checks `deleted_at IS NULL` (404 if trashed).
      const changes = changesOf(dto, refs);
      if (Object.keys(changes).length > 0) {
        const updated = await this.withHandleConflict(() => this.repository.update(orgId, id, { ...changes, updatedAt: new Date() }));
        if (!updated) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
        return mapAgent(updated);
      }
    }

    const row = await this.withHandleConflict(() =>
      this.txHost.withTransaction(async () => {
        // locked until commit: concurrent PATCH/DELETE of this agent (and their cascades) run one after the other
        const current = await this.repository.lockLive(orgId, id);
        if (!current) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
        const now = new Date();
        const changes = changesOf(dto, refs);
        const final = { ...current, ...changes } as AgentRow;

        accepted(checkInstructionsKept(final, dto));
        if (refs.tools !== undefined) {
          const org = await this.orgs.findById(orgId);
          accepted(checkCustomToolSlots(refs.tools, customToolCount(current.tools), org?.limits?.custom_tool_slots));
        }

        const transition = activationTransition(current, dto);
        const activating = transition === 'activating';
        const deactivating = transition === 'deactivating';
        const finalConnectorIds = activating ? assignedConnectorIds(final.connectors, final.tools) : [];
        const connectors = await this.checkReferences(orgId, refs, { currentSubAgents: current.subAgents, alsoConnectors: finalConnectorIds });
        if (activating) accepted(checkActivationAllowed(finalConnectorIds.map((connectorId) => connectors.get(connectorId))));
        const written = withActivationState(changes, dto, transition, now);

        if (Object.keys(written).length === 0) return current;
        // locked above, so still live: the 404 only if that ever stops holding
        const updated = await this.repository.update(orgId, id, { ...written, updatedAt: now });
        if (!updated) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
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

  async deleteAgent(orgId: string, rawId: string): Promise<DeleteAcknowledgementDto> {
    const id = this.agentId(rawId);
    await this.txHost.withTransaction(async () => {
      const current = await this.repository.lockLive(orgId, id);
      if (!current) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
      const now = new Date();
      await this.repository.softDelete(orgId, id, now);
      const torn = await this.cascade.tearDownForAgentDeletion(orgId, id, now);
      this.logger.info({ org_id: orgId, agent_id: id, triggers: torn.triggers.length, chatbots: torn.chatbots.length }, 'agent moved to trash');
    });
    return { id, deleted: true };
  }

  private agentId(rawId: string): string {
    const id = parseId('agent', rawId, { allowBare: true });
    if (!id) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
    return id;
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
      if (!connectors.has(id)) addFieldError(fields, `connectors[${index}]`, 'no such connector in this organization');
    });
    refs.tools?.forEach((tool, index) => {
      if (tool.connector_id && !connectors.has(tool.connector_id)) {
        addFieldError(fields, `tools[${index}].connector_id`, 'no such connector in this organization');
      }
    });
    const agents = new Map(agentRows.map((row) => [row.id, row]));
    const kept = new Set(options.currentSubAgents);
    refs.subAgents?.forEach((id, index) => {
      const agent = agents.get(id);
      if (!agent || (agent.deletedAt !== null && !kept.has(id))) addFieldError(fields, `sub_agents[${index}]`, 'no such agent in this organization');
    });
    const sources = new Set(sourceIds);
    const documents = new Map(documentRows.map((row) => [row.id, row.sourceId]));
    refs.dataSources?.forEach((ref, index) => {
      if (!sources.has(ref.source_id)) {
        addFieldError(fields, `data_sources[${index}].source_id`, 'no such source in this organization');
        return;
      }
      ref.documents?.forEach((documentId, docIndex) => {
        if (documents.get(documentId) !== ref.source_id) {
          addFieldError(fields, `data_sources[${index}].documents[${docIndex}]`, 'no such document in this source');
        }
      });
    });
    if (hasFieldErrors(fields)) throw ApiError.validation(fields);
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
