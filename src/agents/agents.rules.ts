import { newId, parseId } from '../../libs/ids/ids';
import { ApiError, type FieldErrors } from '../common/api-error';
import { addFieldError, hasFieldErrors, refused, type Checked } from '../common/field-errors';
import type { DataSourceRefRow, ToolRefRow } from './agents.table';
import { planLimitReached } from '../orgs/plan-limits';
import { CUSTOM_TOOL_PREFIX, DEFAULT_AGENT_COLOR, type AgentCreateDto, type AgentUpdateDto, type DataSourceRefDto, type ToolRefDto } from './agents.dto';
import type { AgentRow } from './agents.mapper';
import type { AgentChanges, NewAgentRow } from './agents.repository';

/**
 * The rules of an agent as pure functions, used by the service (POST and
 * PATCH /agents) and by the fixture section alike: defaults, reference
 * formats, self-reference, instructions, the custom tool cap, the
 * activation guard, what (de)activation writes and the trash window. Checks that read other
 * rows (references exist, the unique handle) stay with the service.
 */

/** what the agent's own `deactivated_reason` says after a client's PATCH `is_active: false` */
export const MANUAL_DEACTIVATION_REASON = 'manual';
/** a connector in this status blocks activating an agent that uses it */
const AUTH_FAILED = 'auth_failed';

/** The reference fields as a body (or a fixture) gives them. */
type AgentReferenceFields = Pick<AgentCreateDto, 'tools' | 'connectors' | 'sub_agents' | 'data_sources'>;

/** Reference fields of a request body, with ids normalized to their prefixed form. */
export interface NormalizedRefs {
  tools?: ToolRefRow[];
  connectors?: string[];
  subAgents?: string[];
  dataSources?: DataSourceRefRow[];
}

/**
 * What an agent row is built from: the AgentCreate fields, plus the stored
 * state that only the fixture loader may give (the API sets it itself).
 */
interface AgentRowInput extends AgentReferenceFields {
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
export function buildAgentRow(orgId: string, input: AgentRowInput): Checked<NewAgentRow, { refs: NormalizedRefs }> {
  const problems: FieldErrors = {};
  const createdAt = toDate(input.created_at) ?? undefined;
  const id = input.id ?? newId('agent', createdAt);
  const refs = collectReferences(id, input, problems);
  if ((input.instructions ?? null) === null && (input.instructions_html ?? null) === null) {
    addFieldError(problems, 'instructions', 'is required unless instructions_html is provided');
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
  return hasFieldErrors(problems) ? refused(problems) : { ok: true, value: row, refs };
}

/** The reference fields of agent `agentId` normalized, or every format, duplicate and self-reference problem. */
export function referencesOf(agentId: string, dto: AgentReferenceFields): Checked<NormalizedRefs> {
  const problems: FieldErrors = {};
  const refs = collectReferences(agentId, dto, problems);
  return hasFieldErrors(problems) ? refused(problems) : { ok: true, value: refs };
}

function collectReferences(agentId: string, dto: AgentReferenceFields, problems: FieldErrors): NormalizedRefs {
  const refs = normalizeReferences(dto, problems);
  refs.subAgents?.forEach((subAgentId, index) => {
    if (subAgentId === agentId) addFieldError(problems, `sub_agents[${index}]`, 'an agent may not reference itself');
  });
  return refs;
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
        if (!connectorId) addFieldError(fields, `tools[${index}].connector_id`, 'is not a connector id');
      }
      const key = `${tool.name}\u0000${connectorId ?? tool.connector_id ?? ''}`;
      const first = seen.get(key);
      if (first !== undefined) addFieldError(fields, `tools[${index}]`, `duplicates tools[${first}]`);
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
      if (!sourceId) addFieldError(fields, `${path}.source_id`, 'is not a source id');
      else if (seen.has(sourceId)) addFieldError(fields, `${path}.source_id`, `duplicates data_sources[${seen.get(sourceId)}]`);
      else seen.set(sourceId, index);
      const row: DataSourceRefRow = { source_id: sourceId ?? ref.source_id, scope: ref.scope };
      if (ref.documents !== undefined) {
        if (ref.scope !== 'selected' && ref.documents.length > 0) {
          addFieldError(fields, `${path}.documents`, 'is only allowed when scope is selected');
        }
        const documents = ref.documents.map((value, docIndex) => {
          const documentId = parseId('document', value);
          if (!documentId) addFieldError(fields, `${path}.documents[${docIndex}]`, 'is not a document id');
          return documentId ?? value;
        });
        if (new Set(documents).size !== documents.length) addFieldError(fields, `${path}.documents`, 'lists a document more than once');
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
      addFieldError(fields, `${field}[${index}]`, `is not ${kind === 'agent' ? 'an agent' : 'a connector'} id`);
      return value;
    }
    if (seen.has(id)) addFieldError(fields, `${field}[${index}]`, `duplicates ${field}[${seen.get(id)}]`);
    else seen.set(id, index);
    return id;
  });
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

/** Column changes of a PATCH: omitted fields are absent, `null` clears a nullable field. */
export function changesOf(dto: AgentUpdateDto, refs: NormalizedRefs): AgentChanges {
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

/** An agent keeps instructions or instructions_html after a PATCH; the error names the field the PATCH cleared. */
export function checkInstructionsKept(final: Pick<AgentRow, 'instructions' | 'instructionsHtml'>, dto: AgentUpdateDto): Checked<void> {
  if (final.instructions !== null || final.instructionsHtml !== null) return { ok: true, value: undefined };
  return refused({ [dto.instructions === null ? 'instructions' : 'instructions_html']: ['an agent needs instructions or instructions_html'] });
}

/**
 * `limits.custom_tool_slots` caps the `custom_` tools of one agent. An
 * agent already over a lowered cap may still shrink: only a count above the
 * cap that is also above the agent's current count is refused.
 */
export function checkCustomToolSlots(tools: readonly ToolRefRow[], currentCount: number, slots: number | null | undefined): Checked<void> {
  const wanted = customToolCount(tools);
  if (slots === null || slots === undefined || wanted <= slots || wanted <= currentCount) return { ok: true, value: undefined };
  const answer = planLimitReached('custom_tool_slots', slots, `the agent would have ${wanted} custom tools`, {
    tools: [`has ${wanted} custom tools; the plan allows ${slots}`],
  });
  return refused(answer.details?.fields ?? {}, answer);
}

/** Activation is refused while an assigned connector needs reconnecting; nothing changes. */
export function checkActivationAllowed(assigned: ReadonlyArray<{ id: string; name: string; status: string } | undefined>): Checked<void> {
  const broken = assigned.filter((connector) => connector?.status === AUTH_FAILED) as Array<{ id: string; name: string }>;
  if (broken.length === 0) return { ok: true, value: undefined };
  const names = broken.map((c) => `${c.id} ("${c.name}")`).join(', ');
  const fields = { is_active: [`connector ${names} has status auth_failed`] };
  const answer = ApiError.validation(fields, `The agent cannot be activated: connector ${names} has status auth_failed; reconnect it first.`, {
    connector_ids: broken.map((c) => c.id),
  });
  return refused(fields, answer);
}

/**
 * The changes with what switching `is_active` writes to the agent's own
 * deactivation fields: `manual`/now when a client deactivates, cleared on
 * reactivation, unless the same PATCH gives them.
 */
export function withActivationState(changes: AgentChanges, dto: AgentUpdateDto, transition: 'activating' | 'deactivating' | null, now: Date): AgentChanges {
  if (transition === null) return changes;
  const deactivating = transition === 'deactivating';
  return {
    ...changes,
    deactivatedReason: dto.deactivated_reason !== undefined ? dto.deactivated_reason : deactivating ? MANUAL_DEACTIVATION_REASON : null,
    deactivatedAt: dto.deactivated_at !== undefined ? changes.deactivatedAt : deactivating ? now : null,
  };
}

/** The transition a PATCH's `is_active` makes from the current state, if any. */
export function activationTransition(current: { isActive: boolean }, dto: AgentUpdateDto): 'activating' | 'deactivating' | null {
  if (dto.is_active === true && !current.isActive) return 'activating';
  if (dto.is_active === false && current.isActive) return 'deactivating';
  return null;
}

/** How long a deleted agent stays in the trash before it is hard deleted. */
const TRASH_WINDOW_DAYS = 30;

/**
 * The one definition of "past the trash window": an agent soft-deleted before
 * this instant. The purge removes exactly these; until it has run, every
 * agent-addressed endpoint already answers `agent_not_found` for them.
 */
export function trashWindowStart(now: Date = new Date()): Date {
  return new Date(now.getTime() - TRASH_WINDOW_DAYS * 24 * 60 * 60 * 1000);
}
