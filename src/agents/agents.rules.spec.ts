import { accepted, ApiError } from '../common/api-error';
import {
  activationTransition,
  buildAgentRow,
  changesOf,
  checkActivationAllowed,
  checkCustomToolSlots,
  checkInstructionsKept,
  isPlainUpdate,
  MANUAL_DEACTIVATION_REASON,
  referencesOf,
  withActivationState,
} from './agents.rules';
import type { AgentChanges } from './agents.repository';

const ORG = 'org_0123456789abcdef01234567';
const AGENT = 'agent_0123456789abcdef01234567';
const HEX = '0123456789abcdef01234567';

/** The answer a service gives for a refused rule: what `accepted` throws. */
function thrown(work: () => unknown): ApiError {
  try {
    work();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

describe('buildAgentRow: the one row builder of POST /agents and the fixture section', () => {
  it('applies the AgentCreate defaults', () => {
    const built = buildAgentRow(ORG, { handle: 'helpBot', name: 'Help', instructions: 'Be brief.' });
    expect(built.ok).toBe(true);
    expect(built.ok && built.value).toMatchObject({ orgId: ORG, isActive: true, color: '#6366f1', includeSystemPrompt: true, tools: [], connectors: [], subAgents: [], dataSources: [] });
  });

  it('normalizes bare ids to the prefixed form', () => {
    const built = buildAgentRow(ORG, { handle: 'x', name: 'X', instructions: 'x', connectors: [HEX] });
    expect(built.ok && built.value.connectors).toEqual([`connector_${HEX}`]);
  });

  it('names every problem by field', () => {
    const built = buildAgentRow(ORG, {
      id: AGENT,
      handle: 'x',
      name: 'X',
      connectors: [HEX, `connector_${HEX}`],
      sub_agents: [AGENT],
      data_sources: [{ source_id: 'nope', scope: 'all', documents: [`doc_${HEX}`] }],
    });
    expect(built).toEqual({
      ok: false,
      fields: {
        'connectors[1]': ['duplicates connectors[0]'],
        'sub_agents[0]': ['an agent may not reference itself'],
        'data_sources[0].source_id': ['is not a source id'],
        'data_sources[0].documents': ['is only allowed when scope is selected'],
        instructions: ['is required unless instructions_html is provided'],
      },
    });
  });
});

describe('PATCH rules', () => {
  it('a self-reference is refused by id, prefixed or bare', () => {
    expect(referencesOf(AGENT, { sub_agents: [HEX] })).toEqual({ ok: false, fields: { 'sub_agents[0]': ['an agent may not reference itself'] } });
    expect(referencesOf(AGENT, { sub_agents: [AGENT] })).toEqual({ ok: false, fields: { 'sub_agents[0]': ['an agent may not reference itself'] } });
  });

  it('a plain update has no reference list, no is_active and clears no instructions', () => {
    expect(isPlainUpdate({ name: 'New' })).toBe(true);
    expect(isPlainUpdate({ tools: [] })).toBe(false);
    expect(isPlainUpdate({ is_active: false })).toBe(false);
    expect(isPlainUpdate({ instructions: null })).toBe(false);
  });

  it('changes hold the given fields only; null clears', () => {
    expect(changesOf({ description: null, deactivated_at: '2026-01-02T03:04:05Z' }, {})).toEqual({ description: null, deactivatedAt: new Date('2026-01-02T03:04:05Z') });
  });

  it('an agent keeps instructions or instructions_html; the error names the field cleared', () => {
    expect(thrown(() => accepted(checkInstructionsKept({ instructions: null, instructionsHtml: null }, { instructions_html: null }))).details).toEqual({
      fields: { instructions_html: ['an agent needs instructions or instructions_html'] },
      field_count: 1,
    });
    expect(checkInstructionsKept({ instructions: 'x', instructionsHtml: null }, { instructions_html: null }).ok).toBe(true);
  });
});

describe('limits.custom_tool_slots per agent', () => {
  const tools = (n: number) => Array.from({ length: n }, (_v, i) => ({ name: `custom_t${i}`, connector_id: null }));

  it('over the cap is the plan-cap 422, naming the cap and the request field', () => {
    expect(thrown(() => accepted(checkCustomToolSlots(tools(3), 0, 2))).details).toEqual({
      limit: 'custom_tool_slots',
      max: 2,
      fields: { 'limits.custom_tool_slots': ['the agent would have 3 custom tools'], tools: ['has 3 custom tools; the plan allows 2'] },
      field_count: 2,
    });
    // what the fixture loader would name: the same fields as the answer
    expect(checkCustomToolSlots(tools(3), 0, 2)).toMatchObject({ ok: false, fields: { 'limits.custom_tool_slots': ['the agent would have 3 custom tools'] } });
  });

  it('an agent over a lowered cap may shrink; null is unlimited', () => {
    expect(checkCustomToolSlots(tools(3), 4, 2).ok).toBe(true);
    expect(checkCustomToolSlots(tools(50), 0, null).ok).toBe(true);
  });
});

describe('activation', () => {
  it('is refused while an assigned connector is auth_failed, naming it', () => {
    const error = thrown(() => accepted(checkActivationAllowed([{ id: 'connector_a', name: 'Mail', status: 'auth_failed' }, { id: 'connector_b', name: 'Chat', status: 'connected' }, undefined])));
    expect(error.message).toBe('The agent cannot be activated: connector connector_a ("Mail") has status auth_failed; reconnect it first.');
    expect(error.details).toEqual({ fields: { is_active: ['connector connector_a ("Mail") has status auth_failed'] }, connector_ids: ['connector_a'], field_count: 1 });
  });

  it('deactivating writes manual/now, activating clears, unless the PATCH gives them', () => {
    const now = new Date('2026-03-04T05:06:07Z');
    const none: AgentChanges = {};
    expect(withActivationState(none, { is_active: false }, activationTransition({ isActive: true }, { is_active: false }), now)).toEqual({ deactivatedReason: MANUAL_DEACTIVATION_REASON, deactivatedAt: now });
    expect(withActivationState(none, { is_active: true, deactivated_reason: 'kept' }, activationTransition({ isActive: false }, { is_active: true }), now)).toEqual({ deactivatedReason: 'kept', deactivatedAt: null });
    expect(withActivationState({ name: 'N' }, { is_active: true }, null, now)).toEqual({ name: 'N' });
    expect(none).toEqual({});
    expect(activationTransition({ isActive: true }, { is_active: true })).toBeNull();
  });
});
