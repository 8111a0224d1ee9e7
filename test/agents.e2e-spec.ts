import { newId } from '../libs/ids/ids';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { insertConnector, insertDocument, insertSource, readAgentRow } from './support/agent-rows';

const HEX24 = /^[a-f0-9]{24}$/;
const AGENT_FIELDS = [
  'id',
  'handle',
  'name',
  'description',
  'model',
  'is_active',
  'color',
  'avatar',
  'tools_count',
  'sub_agents_count',
  'created_at',
  'updated_at',
];
/** Read-back fields beyond the contract's table (docs/decisions.md "Agents: what the Agent response carries") */
const READ_BACK_FIELDS = [
  'instructions',
  'instructions_html',
  'include_system_prompt',
  'tools',
  'connectors',
  'sub_agents',
  'data_sources',
  'pending_trigger_hint',
  'deactivated_reason',
  'deactivated_at',
];

let t: TestApp;
let handleCounter = 0;
const uniqueHandle = (base = 'agent') => `${base}${Date.now().toString(36)}${++handleCounter}`;

async function createAgent(org: TestOrg, body: Record<string, unknown> = {}) {
  const res = await t.http
    .post('/api/v1/agents')
    .set('Authorization', org.auth)
    .send({ handle: uniqueHandle(), name: 'Support bot', instructions: 'Help customers.', ...body });
  expect(res.status).toBe(201);
  return res.body.data as Record<string, unknown> & { id: string };
}

beforeAll(async () => {
  t = await createTestApp();
});

afterAll(async () => {
  await t.close();
});

describe('POST /agents creates an agent with the contract defaults', () => {
  it('returns 201 with is_active true, counts 0, model null, color #6366f1, include_system_prompt true', async () => {
    const org = await createOrg(t.app);
    const res = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'supportBot', name: 'Support', instructions: 'Be kind.' });
    expect(res.status).toBe(201);
    const agent = res.body.data;
    expect(Object.keys(agent).sort()).toEqual([...AGENT_FIELDS, ...READ_BACK_FIELDS].sort());
    expect(agent.id).toMatch(/^agent_[a-f0-9]{24}$/);
    expect(agent).toMatchObject({
      handle: 'supportBot',
      name: 'Support',
      description: null,
      model: null,
      is_active: true,
      color: '#6366f1',
      avatar: null,
      tools_count: 0,
      sub_agents_count: 0,
      instructions: 'Be kind.',
      instructions_html: null,
      include_system_prompt: true,
      tools: [],
      connectors: [],
      sub_agents: [],
      data_sources: [],
      pending_trigger_hint: null,
      deactivated_reason: null,
      deactivated_at: null,
    });
    expect(new Date(agent.created_at).toISOString()).toBe(agent.created_at);
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  it('keeps every given field and derives the counts from the arrays', async () => {
    const org = await createOrg(t.app);
    const connector = await insertConnector(t, org.orgId);
    const sub = await createAgent(org);
    const agent = await createAgent(org, {
      description: 'Answers tickets',
      model: 'gpt-x',
      color: '#10b981',
      avatar: 'https://example.com/a.png',
      include_system_prompt: false,
      tools: [{ name: 'zendesk_get_ticket', connector_id: connector.id }, { name: 'search_knowledge' }],
      connectors: [connector.id],
      sub_agents: [sub.id],
      pending_trigger_hint: { event: 'ticket.created' },
    });
    expect(agent).toMatchObject({
      description: 'Answers tickets',
      model: 'gpt-x',
      color: '#10b981',
      avatar: 'https://example.com/a.png',
      include_system_prompt: false,
      tools_count: 2,
      sub_agents_count: 1,
      tools: [
        { name: 'zendesk_get_ticket', connector_id: connector.id },
        { name: 'search_knowledge', connector_id: null },
      ],
      connectors: [connector.id],
      sub_agents: [sub.id],
      pending_trigger_hint: { event: 'ticket.created' },
    });
  });

  it('accepts instructions_html instead of instructions', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org, { instructions: undefined, instructions_html: '<p>Help.</p>' });
    expect(agent).toMatchObject({ instructions: null, instructions_html: '<p>Help.</p>' });
  });

  it.each([
    ['instructions missing', { handle: 'aBot', name: 'A' }, 'instructions'],
    ['handle missing', { name: 'A', instructions: 'x' }, 'handle'],
    ['name missing', { handle: 'aBot', instructions: 'x' }, 'name'],
    ['handle starting with a digit', { handle: '1bot', name: 'A', instructions: 'x' }, 'handle'],
    ['handle with a dash', { handle: 'my-bot', name: 'A', instructions: 'x' }, 'handle'],
    ['handle with an underscore', { handle: 'my_bot', name: 'A', instructions: 'x' }, 'handle'],
    ['empty handle', { handle: '', name: 'A', instructions: 'x' }, 'handle'],
    ['color that is not hex', { handle: 'aBot', name: 'A', instructions: 'x', color: 'blue' }, 'color'],
    ['color null', { handle: 'aBot', name: 'A', instructions: 'x', color: null }, 'color'],
    ['tools not an array', { handle: 'aBot', name: 'A', instructions: 'x', tools: 'x' }, 'tools'],
    ['tool without a name', { handle: 'aBot', name: 'A', instructions: 'x', tools: [{ connector_id: null }] }, 'tools[0].name'],
    ['data source with a bad scope', { handle: 'aBot', name: 'A', instructions: 'x', data_sources: [{ source_id: 'source_0123456789abcdef01234567', scope: 'some' }] }, 'data_sources[0].scope'],
    ['pending_trigger_hint not an object', { handle: 'aBot', name: 'A', instructions: 'x', pending_trigger_hint: 'soon' }, 'pending_trigger_hint'],
    ['unknown field', { handle: 'aBot', name: 'A', instructions: 'x', tools_count: 3 }, 'tools_count'],
    ['is_active on create', { handle: 'aBot', name: 'A', instructions: 'x', is_active: false }, 'is_active'],
  ])('rejects %s with 422 validation_failed naming the field', async (_case, body, field) => {
    const org = await createOrg(t.app);
    const res = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send(body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(Object.keys(res.body.error.details.fields)).toContain(field);
    const list = await t.http.get('/api/v1/agents').set('Authorization', org.auth);
    expect(list.body.data).toEqual([]);
  });
});

describe('handles are unique per organization, case-insensitively, among live agents', () => {
  it('a second agent with the same handle in another case is 409 agent_handle_taken', async () => {
    const org = await createOrg(t.app);
    await createAgent(org, { handle: 'Helper' });
    const res = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'hELPER', name: 'B', instructions: 'x' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('agent_handle_taken');
  });

  it('two racing creates of Bot and bot give one 201 and one 409, never two agents and never a 500', async () => {
    const org = await createOrg(t.app);
    const [a, b] = await Promise.all([
      t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'Bot', name: 'A', instructions: 'x' }),
      t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'bot', name: 'B', instructions: 'x' }),
    ]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    expect([a, b].find((res) => res.status === 409)!.body.error.code).toBe('agent_handle_taken');
    const list = await t.http.get('/api/v1/agents').set('Authorization', org.auth);
    expect(list.body.data).toHaveLength(1);
  });

  it('the same handle is free in another organization', async () => {
    const orgA = await createOrg(t.app);
    const orgB = await createOrg(t.app);
    await createAgent(orgA, { handle: 'sharedName' });
    await createAgent(orgB, { handle: 'sharedName' });
  });

  it('renaming onto an existing handle is 409 and changes nothing; renaming to a new case of its own handle works', async () => {
    const org = await createOrg(t.app);
    await createAgent(org, { handle: 'alpha' });
    const beta = await createAgent(org, { handle: 'beta' });
    const res = await t.http.patch(`/api/v1/agents/${beta.id}`).set('Authorization', org.auth).send({ handle: 'ALPHA', name: 'renamed' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('agent_handle_taken');
    const after = await t.http.get(`/api/v1/agents/${beta.id}`).set('Authorization', org.auth);
    expect(after.body.data).toMatchObject({ handle: 'beta', name: 'Support bot' });
    const recase = await t.http.patch(`/api/v1/agents/${beta.id}`).set('Authorization', org.auth).send({ handle: 'Beta' });
    expect(recase.status).toBe(200);
    expect(recase.body.data.handle).toBe('Beta');
  });
});

describe('GET /agents lists newest first with cursor pagination', () => {
  it('pages through every live agent, newest first, with next_cursor null at the end', async () => {
    const org = await createOrg(t.app);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await createAgent(org)).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: { data: Array<{ id: string }>; meta: { next_cursor: string | null } } } = await t.http
        .get('/api/v1/agents')
        .query({ limit: 2, ...(cursor ? { cursor } : {}) })
        .set('Authorization', org.auth);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((agent: { id: string }) => agent.id));
      cursor = res.body.meta.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...created].reverse());
  });

  it('never lists soft-deleted agents', async () => {
    const org = await createOrg(t.app);
    const kept = await createAgent(org);
    const gone = await createAgent(org);
    expect((await t.http.delete(`/api/v1/agents/${gone.id}`).set('Authorization', org.auth)).status).toBe(200);
    const res = await t.http.get('/api/v1/agents').set('Authorization', org.auth);
    expect(res.body.data.map((agent: { id: string }) => agent.id)).toEqual([kept.id]);
    expect(res.body.meta.next_cursor).toBeNull();
  });

  it.each([['0'], ['101'], ['-1'], ['abc']])('limit=%s is 422 validation_failed', async (limit) => {
    const org = await createOrg(t.app);
    const res = await t.http.get('/api/v1/agents').query({ limit }).set('Authorization', org.auth);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
  });

  it('an invalid cursor is 422 validation_failed', async () => {
    const org = await createOrg(t.app);
    const res = await t.http.get('/api/v1/agents').query({ cursor: 'nope' }).set('Authorization', org.auth);
    expect(res.status).toBe(422);
  });
});

describe('GET /agents/{id} accepts prefixed and bare ids', () => {
  it('returns the same agent for agent_<hex> and <hex>', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const bare = agent.id.slice('agent_'.length);
    expect(bare).toMatch(HEX24);
    const prefixed = await t.http.get(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth);
    const plain = await t.http.get(`/api/v1/agents/${bare}`).set('Authorization', org.auth);
    expect(prefixed.status).toBe(200);
    expect(plain.status).toBe(200);
    expect(plain.body.data).toEqual(prefixed.body.data);
  });

  it('PATCH and DELETE accept the bare id too', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const bare = agent.id.slice('agent_'.length);
    const patched = await t.http.patch(`/api/v1/agents/${bare}`).set('Authorization', org.auth).send({ name: 'Bare' });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id: agent.id, name: 'Bare' });
    const deleted = await t.http.delete(`/api/v1/agents/${bare}`).set('Authorization', org.auth);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toEqual({ id: agent.id, deleted: true });
  });

  it.each([['agent_0123456789abcdef01234567'], ['0123456789abcdef01234567'], ['agent_XYZ'], ['conv_0123456789abcdef01234567'], ['AGENT_0123456789ABCDEF01234567'], ['x'.repeat(300)]])(
    'unknown or malformed id %s is 404 agent_not_found on GET, PATCH and DELETE',
    async (id) => {
      const org = await createOrg(t.app);
      for (const res of [
        await t.http.get(`/api/v1/agents/${id}`).set('Authorization', org.auth),
        await t.http.patch(`/api/v1/agents/${id}`).set('Authorization', org.auth).send({ name: 'x' }),
        await t.http.delete(`/api/v1/agents/${id}`).set('Authorization', org.auth),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('agent_not_found');
      }
    },
  );
});

describe('PATCH /agents/{id}: omitted fields unchanged, null clears, tools replaced whole', () => {
  it('changes only the given fields and bumps updated_at', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org, { description: 'd', model: 'm1', avatar: 'a' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const res = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ name: 'New name' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ ...agent, name: 'New name', updated_at: res.body.data.updated_at });
    expect(new Date(res.body.data.updated_at).getTime()).toBeGreaterThan(new Date(agent.updated_at as string).getTime());
  });

  it('null clears nullable fields', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org, { description: 'd', model: 'm1', avatar: 'a', pending_trigger_hint: { a: 1 } });
    const res = await t.http
      .patch(`/api/v1/agents/${agent.id}`)
      .set('Authorization', org.auth)
      .send({ description: null, model: null, avatar: null, pending_trigger_hint: null });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ description: null, model: null, avatar: null, pending_trigger_hint: null });
  });

  it.each([['handle'], ['name'], ['color'], ['tools'], ['connectors'], ['sub_agents'], ['data_sources'], ['include_system_prompt'], ['is_active']])(
    'null for the non-nullable %s is 422',
    async (field) => {
      const org = await createOrg(t.app);
      const agent = await createAgent(org);
      const res = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ [field]: null });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toContain(field);
    },
  );

  it('a bad handle format is 422', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const res = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ handle: 'no spaces' });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields.handle).toBeDefined();
  });

  it('clearing instructions is allowed only while instructions_html is set', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const refused = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ instructions: null });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details.fields.instructions).toBeDefined();
    const swapped = await t.http
      .patch(`/api/v1/agents/${agent.id}`)
      .set('Authorization', org.auth)
      .send({ instructions: null, instructions_html: '<b>hi</b>' });
    expect(swapped.status).toBe(200);
    expect(swapped.body.data).toMatchObject({ instructions: null, instructions_html: '<b>hi</b>' });
  });

  it('a supplied tools array replaces the whole list; tools_count follows', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org, { tools: [{ name: 'search_knowledge' }, { name: 'web_browse' }] });
    expect(agent.tools_count).toBe(2);
    const res = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ tools: [{ name: 'calculator' }] });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ tools_count: 1, tools: [{ name: 'calculator', connector_id: null }] });
    const appended = await t.http
      .patch(`/api/v1/agents/${agent.id}`)
      .set('Authorization', org.auth)
      .send({ tools: [...res.body.data.tools, { name: 'web_browse' }] });
    expect(appended.body.data.tools_count).toBe(2);
    const cleared = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ tools: [], sub_agents: [] });
    expect(cleared.body.data).toMatchObject({ tools_count: 0, sub_agents_count: 0, tools: [] });
  });

  it('an empty body changes nothing', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const res = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({});
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(agent);
  });

  it('deactivated_reason and deactivated_at may be set and cleared for diagnostics', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const set = await t.http
      .patch(`/api/v1/agents/${agent.id}`)
      .set('Authorization', org.auth)
      .send({ deactivated_reason: 'investigating loop', deactivated_at: '2026-01-02T03:04:05.000Z' });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ is_active: true, deactivated_reason: 'investigating loop', deactivated_at: '2026-01-02T03:04:05.000Z' });
    const cleared = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ deactivated_reason: null, deactivated_at: null });
    expect(cleared.body.data).toMatchObject({ deactivated_reason: null, deactivated_at: null });
    const bad = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ deactivated_at: 'yesterday' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.fields.deactivated_at).toBeDefined();
  });
});

describe('every referenced id is checked inside the organization', () => {
  it('unknown connectors, tool connectors, sub-agents and sources are 422 naming each field', async () => {
    const org = await createOrg(t.app);
    const connector = await insertConnector(t, org.orgId);
    const source = await insertSource(t, org.orgId);
    const res = await t.http
      .post('/api/v1/agents')
      .set('Authorization', org.auth)
      .send({
        handle: 'refs',
        name: 'Refs',
        instructions: 'x',
        connectors: [connector.id, 'connector_0123456789abcdef01234567'],
        tools: [{ name: 'a', connector_id: connector.id }, { name: 'b', connector_id: 'connector_aaaaaaaaaaaaaaaaaaaaaaaa' }],
        sub_agents: ['agent_0123456789abcdef01234567'],
        data_sources: [{ source_id: source.id, scope: 'all' }, { source_id: 'source_0123456789abcdef01234567', scope: 'all' }],
      });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(Object.keys(res.body.error.details.fields).sort()).toEqual(['connectors[1]', 'data_sources[1].source_id', 'sub_agents[0]', 'tools[1].connector_id']);
    expect(res.body.error.message).toContain('connectors[1]');
  });

  it("another organization's connector, agent and source are unknown here", async () => {
    const orgA = await createOrg(t.app);
    const orgB = await createOrg(t.app);
    const connectorA = await insertConnector(t, orgA.orgId);
    const sourceA = await insertSource(t, orgA.orgId);
    const agentA = await createAgent(orgA);
    const res = await t.http
      .post('/api/v1/agents')
      .set('Authorization', orgB.auth)
      .send({
        handle: 'thief',
        name: 'Thief',
        instructions: 'x',
        connectors: [connectorA.id],
        sub_agents: [agentA.id],
        data_sources: [{ source_id: sourceA.id, scope: 'all' }],
      });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields).sort()).toEqual(['connectors[0]', 'data_sources[0].source_id', 'sub_agents[0]']);
  });

  it('malformed ids and duplicates are 422 naming the field', async () => {
    const org = await createOrg(t.app);
    const connector = await insertConnector(t, org.orgId);
    const res = await t.http
      .post('/api/v1/agents')
      .set('Authorization', org.auth)
      .send({ handle: 'dupes', name: 'D', instructions: 'x', connectors: [connector.id, connector.id.slice(-24), 'zendesk'] });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields).sort()).toEqual(['connectors[1]', 'connectors[2]']);
  });

  it('bare 24-hex connector and agent ids are stored in their prefixed form', async () => {
    const org = await createOrg(t.app);
    const connector = await insertConnector(t, org.orgId);
    const sub = await createAgent(org);
    const agent = await createAgent(org, { connectors: [connector.id.slice(-24)], sub_agents: [sub.id.slice(-24)] });
    expect(agent).toMatchObject({ connectors: [connector.id], sub_agents: [sub.id] });
  });

  it('documents must belong to the referenced source and need scope selected', async () => {
    const org = await createOrg(t.app);
    const source = await insertSource(t, org.orgId);
    const other = await insertSource(t, org.orgId, { name: 'Other' });
    const doc = await insertDocument(t, org.orgId, source.id);
    const foreign = await insertDocument(t, org.orgId, other.id);
    const ok = await createAgent(org, { data_sources: [{ source_id: source.id, scope: 'selected', documents: [doc.id] }] });
    expect(ok.data_sources).toEqual([{ source_id: source.id, scope: 'selected', documents: [doc.id] }]);
    const wrong = await t.http
      .post('/api/v1/agents')
      .set('Authorization', org.auth)
      .send({ handle: 'docs', name: 'D', instructions: 'x', data_sources: [{ source_id: source.id, scope: 'selected', documents: [foreign.id] }] });
    expect(wrong.status).toBe(422);
    expect(Object.keys(wrong.body.error.details.fields)).toEqual(['data_sources[0].documents[0]']);
    const scopeAll = await t.http
      .post('/api/v1/agents')
      .set('Authorization', org.auth)
      .send({ handle: 'docs', name: 'D', instructions: 'x', data_sources: [{ source_id: source.id, scope: 'all', documents: [doc.id] }] });
    expect(scopeAll.status).toBe(422);
    expect(Object.keys(scopeAll.body.error.details.fields)).toEqual(['data_sources[0].documents']);
  });

  it('PATCH checks references too, and an agent listing itself in sub_agents is 422', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const self = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ sub_agents: [agent.id] });
    expect(self.status).toBe(422);
    expect(self.body.error.details.fields['sub_agents[0]'][0]).toMatch(/itself/);
    const selfBare = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ sub_agents: [agent.id.slice(-24)] });
    expect(selfBare.status).toBe(422);
    const unknown = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ connectors: ['connector_0123456789abcdef01234567'] });
    expect(unknown.status).toBe(422);
    expect(Object.keys(unknown.body.error.details.fields)).toEqual(['connectors[0]']);
    const after = await t.http.get(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth);
    expect(after.body.data).toEqual(agent);
  });

  it('a soft-deleted agent cannot be added as a sub-agent, but one already listed may be kept', async () => {
    const org = await createOrg(t.app);
    const sub = await createAgent(org);
    const other = await createAgent(org);
    const parent = await createAgent(org, { sub_agents: [sub.id] });
    await t.http.delete(`/api/v1/agents/${sub.id}`).set('Authorization', org.auth).expect(200);
    const keep = await t.http.patch(`/api/v1/agents/${parent.id}`).set('Authorization', org.auth).send({ sub_agents: [sub.id, other.id] });
    expect(keep.status).toBe(200);
    expect(keep.body.data.sub_agents_count).toBe(2);
    const add = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'late', name: 'L', instructions: 'x', sub_agents: [sub.id] });
    expect(add.status).toBe(422);
    expect(Object.keys(add.body.error.details.fields)).toEqual(['sub_agents[0]']);
  });
});

describe('plan caps from org.limits', () => {
  it('creating beyond limits.agents is 422 naming the limit; null means unlimited', async () => {
    const org = await createOrg(t.app, { limits: { agents: 2 } });
    await createAgent(org);
    await createAgent(org);
    const res = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'third', name: 'T', instructions: 'x' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.message).toContain('limits.agents');
    // the one plan-cap shape: the cap's name and value, and the cap as the field at fault
    expect(res.body.error.details).toEqual({ limit: 'agents', max: 2, fields: { 'limits.agents': [expect.any(String)] }, field_count: 1 });
    const unlimited = await createOrg(t.app, { limits: { agents: null } });
    for (let i = 0; i < 3; i++) await createAgent(unlimited);
  });

  it('soft-deleted agents do not count against limits.agents', async () => {
    const org = await createOrg(t.app, { limits: { agents: 1 } });
    const first = await createAgent(org);
    await t.http.delete(`/api/v1/agents/${first.id}`).set('Authorization', org.auth).expect(200);
    await createAgent(org);
  });

  it('concurrent creates cannot overshoot limits.agents', async () => {
    const org = await createOrg(t.app, { limits: { agents: 2 } });
    const results = await Promise.all(
      Array.from({ length: 5 }, (_v, i) => t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: `racer${i}`, name: 'R', instructions: 'x' })),
    );
    expect(results.map((res) => res.status).sort()).toEqual([201, 201, 422, 422, 422]);
    const list = await t.http.get('/api/v1/agents').set('Authorization', org.auth);
    expect(list.body.data).toHaveLength(2);
  });

  it('an update giving the agent more custom_ tools than limits.custom_tool_slots is 422 naming the limit', async () => {
    const org = await createOrg(t.app, { limits: { custom_tool_slots: 2 } });
    const agent = await createAgent(org, { tools: [{ name: 'custom_lookup' }, { name: 'search_knowledge' }] });
    const ok = await t.http
      .patch(`/api/v1/agents/${agent.id}`)
      .set('Authorization', org.auth)
      .send({ tools: [{ name: 'custom_lookup' }, { name: 'custom_refund' }, { name: 'search_knowledge' }, { name: 'web_browse' }] });
    expect(ok.status).toBe(200);
    const over = await t.http
      .patch(`/api/v1/agents/${agent.id}`)
      .set('Authorization', org.auth)
      .send({ tools: [{ name: 'custom_lookup' }, { name: 'custom_refund' }, { name: 'custom_third' }] });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('validation_failed');
    expect(over.body.error.message).toContain('custom_tool_slots');
    expect(over.body.error.details).toEqual({
      limit: 'custom_tool_slots',
      max: 2,
      fields: { 'limits.custom_tool_slots': [expect.any(String)], tools: ['has 3 custom tools; the plan allows 2'] },
      field_count: 2,
    });
    const stored = await readAgentRow(t, org.orgId, agent.id);
    expect(stored!.tools).toHaveLength(4);
  });

  it('the custom tool cap applies on create too', async () => {
    const org = await createOrg(t.app, { limits: { custom_tool_slots: 1 } });
    const res = await t.http
      .post('/api/v1/agents')
      .set('Authorization', org.auth)
      .send({ handle: 'many', name: 'M', instructions: 'x', tools: [{ name: 'custom_a' }, { name: 'custom_b' }] });
    expect(res.status).toBe(422);
    expect(res.body.error.message).toContain('custom_tool_slots');
  });
});

describe('scopes: agents:read, agents:write, agents:delete', () => {
  const endpoints = (id: string) =>
    [
      ['GET /agents', 'agents:read', () => t.http.get('/api/v1/agents')],
      ['POST /agents', 'agents:write', () => t.http.post('/api/v1/agents').send({ handle: 'scoped', name: 'S', instructions: 'x' })],
      ['GET /agents/{id}', 'agents:read', () => t.http.get(`/api/v1/agents/${id}`)],
      ['PATCH /agents/{id}', 'agents:write', () => t.http.patch(`/api/v1/agents/${id}`).send({ name: 'S' })],
      ['DELETE /agents/{id}', 'agents:delete', () => t.http.delete(`/api/v1/agents/${id}`)],
    ] as const;

  it('every endpoint is 401 unauthorized without a key or with a wrong key', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    for (const [name, , request] of endpoints(agent.id)) {
      const missing = await request();
      expect([name, missing.status, missing.body.error?.code]).toEqual([name, 401, 'unauthorized']);
      const wrong = await request().set('Authorization', 'Bearer svc_live_wrongwrongwrongwrongwrongwrongwrong');
      expect([name, wrong.status]).toEqual([name, 401]);
    }
  });

  it('every endpoint is 403 insufficient_scope for a key holding every other agents scope, and works with its own', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    for (const [name, scope, request] of endpoints(agent.id)) {
      const others = (['agents:read', 'agents:write', 'agents:delete', 'org:read'] as const).filter((s) => s !== scope);
      const key = await org.key([...others]);
      const res = await request().set('Authorization', key.auth);
      expect([name, res.status, res.body.error?.code]).toEqual([name, 403, 'insufficient_scope']);
      const own = await org.key([scope]);
      const allowed = await request().set('Authorization', own.auth);
      expect([name, allowed.status < 300]).toEqual([name, true]);
    }
  });
});

describe('organization isolation', () => {
  it("org B gets 404 agent_not_found for org A's agent on GET, PATCH and DELETE, and never lists it", async () => {
    const orgA = await createOrg(t.app);
    const orgB = await createOrg(t.app);
    const agent = await createAgent(orgA);
    for (const id of [agent.id, agent.id.slice(-24)]) {
      const get = await t.http.get(`/api/v1/agents/${id}`).set('Authorization', orgB.auth);
      const patch = await t.http.patch(`/api/v1/agents/${id}`).set('Authorization', orgB.auth).send({ name: 'pwned', is_active: false });
      const del = await t.http.delete(`/api/v1/agents/${id}`).set('Authorization', orgB.auth);
      for (const res of [get, patch, del]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('agent_not_found');
      }
    }
    const list = await t.http.get('/api/v1/agents').set('Authorization', orgB.auth);
    expect(list.body.data).toEqual([]);
    const still = await t.http.get(`/api/v1/agents/${agent.id}`).set('Authorization', orgA.auth);
    expect(still.body.data).toEqual(agent);
  });
});

describe('the OpenAPI document describes the five agent operations', () => {
  it('has operationIds, scopes, request bodies, envelopes and errors', async () => {
    const res = await t.http.get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    const ops = {
      listAgents: doc.paths['/agents'].get,
      createAgent: doc.paths['/agents'].post,
      getAgent: doc.paths['/agents/{id}'].get,
      updateAgent: doc.paths['/agents/{id}'].patch,
      deleteAgent: doc.paths['/agents/{id}'].delete,
    };
    for (const [operationId, op] of Object.entries(ops)) {
      expect(op.operationId).toBe(operationId);
      expect(op.security).toBeDefined();
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403', '429']));
    }
    expect(Object.keys(ops.createAgent.responses)).toEqual(expect.arrayContaining(['201', '409', '422']));
    expect(Object.keys(ops.updateAgent.responses)).toEqual(expect.arrayContaining(['200', '404', '409', '422']));
    expect(Object.keys(ops.getAgent.responses)).toEqual(expect.arrayContaining(['200', '404']));
    expect(Object.keys(ops.deleteAgent.responses)).toEqual(expect.arrayContaining(['200', '404']));
    expect(ops.createAgent.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/AgentCreateDto');
    expect(ops.updateAgent.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/AgentUpdateDto');
    const idParam = ops.getAgent.parameters.find((p: { name: string }) => p.name === 'id');
    expect(idParam.schema.pattern).toBe('^(agent_[a-f0-9]{24}|[a-f0-9]{24})$');

    const agentSchema = doc.components.schemas.AgentDto;
    // every field an Agent answer always carries is required (nullable where it may be null), so generated clients need no undefined checks
    expect(agentSchema.required.sort()).toEqual(
      [
        'avatar', 'color', 'connectors', 'created_at', 'data_sources', 'deactivated_at', 'deactivated_reason', 'description', 'handle', 'id',
        'include_system_prompt', 'instructions', 'instructions_html', 'is_active', 'model', 'name', 'pending_trigger_hint', 'sub_agents',
        'sub_agents_count', 'tools', 'tools_count', 'updated_at',
      ],
    );
    expect(Object.keys(agentSchema.properties)).toEqual(expect.arrayContaining(AGENT_FIELDS));
    expect(agentSchema.properties.description.type).toEqual(['string', 'null']);
    const create = doc.components.schemas.AgentCreateDto;
    expect(create.required.sort()).toEqual(['handle', 'name']);
    expect(create.properties.handle.pattern).toBe('^[a-zA-Z][a-zA-Z0-9]*$');
    // no `default` keyword in request schemas (generated clients would make the field required); the description names it
    expect(create.properties.color.default).toBeUndefined();
    expect(create.properties.color.description).toContain('Default: `#6366f1`');
    const update = doc.components.schemas.AgentUpdateDto;
    expect(update.required ?? []).toEqual([]);
    expect(Object.keys(update.properties)).toEqual(expect.arrayContaining(['is_active', 'deactivated_reason', 'deactivated_at', 'tools', 'handle']));
  });
});

describe('avatar: no scheme that runs script or reads the viewer\'s machine', () => {
  const REFUSED = [
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'java\tscript:alert(1)',
    ' javascript:alert(1)',
    '\u0001javascript:alert(1)',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    'FILE://c:/windows/win.ini',
    'data:text/html,<script>alert(1)</script>',
    'data:,hello',
    'data:application/javascript;base64,YWxlcnQoMSk=',
    'https://example.com/a.png\n',
  ];
  const ACCEPTED = [
    'https://cdn.example.com/avatars/42.png?size=64',
    'http://example.com/a.jpg',
    'data:image/png;base64,iVBORw0KGgo=',
    'DATA:image/svg+xml;utf8,<svg xmlns="http://www.w3.org/2000/svg"/>',
    'robot',
    '🤖',
    'avatars/support-bot.webp',
    '/static/avatars/7.png',
    'javascript-guru.png',
    '',
  ];

  it.each(REFUSED)('%j → 422 naming avatar, on create, update and in the fixture loader', async (avatar) => {
    const org = await createOrg(t.app);
    const created = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: uniqueHandle(), name: 'A', instructions: 'x', avatar });
    expect(created.status).toBe(422);
    expect(Object.keys(created.body.error.details.fields)).toEqual(['avatar']);
    const agent = await createAgent(org);
    const updated = await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).send({ avatar });
    expect(updated.status).toBe(422);
    expect(Object.keys(updated.body.error.details.fields)).toEqual(['avatar']);
    const orgId = newId('org');
    await expect(
      t.app.get(FixtureLoader).load({ orgs: [{ id: orgId, name: 'Avatar', slug: `avatar-${orgId.slice(-8)}`, agents: [{ handle: 'bot', name: 'Bot', instructions: 'x', avatar }] }] }),
    ).rejects.toMatchObject({ path: 'orgs[0].agents[0].avatar' });
  });

  it('every realistic avatar is accepted and returned as sent', async () => {
    const org = await createOrg(t.app);
    for (const avatar of ACCEPTED) expect((await createAgent(org, { avatar })).avatar).toBe(avatar);
  });
});
