import { insertChatbot, insertConnector, insertConversation, insertTrigger } from './support/readside-rows';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The requests a client builds from the contract's tables succeed.
 * For AgentCreate and AgentUpdate, each optional field is sent absent, `null`
 * where the table says nullable, and with every documented value; the response
 * carries the documented default. The query parameters of every list are
 * optional: each list answers without them (with its documented default page
 * size), with each documented value, and an unknown parameter is ignored.
 */
let t: TestApp;
let org: TestOrg;
const api = '/api/v1';

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
});
afterAll(() => t.close());

let counter = 0;
const handle = () => `contract${++counter}`;
const required = () => ({ handle: handle(), name: 'Contract agent', instructions: 'Follow the contract.' });

async function create(body: Record<string, unknown>) {
  const res = await t.http.post(`${api}/agents`).set('Authorization', org.auth).send(body);
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: expect.anything() });
  return res.body.data as Record<string, unknown>;
}

async function patch(id: string, body: Record<string, unknown>) {
  const res = await t.http.patch(`${api}/agents/${id}`).set('Authorization', org.auth).send(body);
  expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 200, error: undefined });
  return res.body.data as Record<string, unknown>;
}

describe('AgentCreate: every optional field may be left out, and takes its documented default', () => {
  it('only the required fields: the documented defaults in the response', async () => {
    const agent = await create(required());
    expect(agent).toMatchObject({
      is_active: true,
      color: '#6366f1',
      include_system_prompt: true,
      description: null,
      model: null,
      avatar: null,
      tools_count: 0,
      sub_agents_count: 0,
      tools: [],
      connectors: [],
      sub_agents: [],
      data_sources: [],
      pending_trigger_hint: null,
      instructions_html: null,
    });
  });

  it('instructions may be left out when instructions_html is given', async () => {
    const { instructions: _left, ...body } = required();
    const agent = await create({ ...body, instructions_html: '<p>Follow the contract.</p>' });
    expect(agent).toMatchObject({ instructions: null, instructions_html: '<p>Follow the contract.</p>' });
  });

  it.each(['description', 'model', 'avatar', 'pending_trigger_hint'])('%s: null is accepted and returned as null', async (field) => {
    expect((await create({ ...required(), [field]: null }))[field]).toBeNull();
  });

  it.each(['#abc', '#abcd', '#aabbcc', '#aabbccdd', '#AABBCC'])('color %s: every CSS hex color form', async (color) => {
    expect((await create({ ...required(), color })).color).toBe(color);
  });

  it.each([true, false])('include_system_prompt %p', async (value) => {
    expect((await create({ ...required(), include_system_prompt: value })).include_system_prompt).toBe(value);
  });

  it('tools: a ToolRef without connector_id, and with connector_id null', async () => {
    const agent = await create({ ...required(), tools: [{ name: 'search_knowledge' }, { name: 'web_search', connector_id: null }] });
    expect(agent.tools).toEqual([
      { name: 'search_knowledge', connector_id: null },
      { name: 'web_search', connector_id: null },
    ]);
    expect(agent.tools_count).toBe(2);
  });

  it('empty arrays for every list field', async () => {
    const agent = await create({ ...required(), tools: [], connectors: [], sub_agents: [], data_sources: [] });
    expect(agent).toMatchObject({ tools: [], connectors: [], sub_agents: [], data_sources: [], tools_count: 0, sub_agents_count: 0 });
  });

  it.each(['all', 'selected'])('data_sources scope %s, documents left out', async (scope) => {
    const sources = await t.http.get(`${api}/sources`).set('Authorization', org.auth).expect(200);
    const upload = (sources.body.data as Array<{ id: string; type: string }>).find((source) => source.type === 'upload')!;
    const agent = await create({ ...required(), data_sources: [{ source_id: upload.id, scope }] });
    expect(agent.data_sources).toEqual([{ source_id: upload.id, scope }]);
  });

  it('sub_agents: another agent of the organization', async () => {
    const other = await create(required());
    const agent = await create({ ...required(), sub_agents: [other.id] });
    expect(agent).toMatchObject({ sub_agents: [other.id], sub_agents_count: 1 });
  });
});

describe('AgentUpdate: any subset of fields, none required; omitted fields are unchanged', () => {
  let agent: Record<string, unknown>;
  beforeAll(async () => {
    agent = await create({ ...required(), description: 'before', model: 'model-a', color: '#112233', avatar: 'https://example.com/a.png', include_system_prompt: false });
  });

  /** PATCH one field; every other field of the agent must stay as it was. */
  async function patchOne(body: Record<string, unknown>) {
    const before = (await t.http.get(`${api}/agents/${agent.id}`).set('Authorization', org.auth).expect(200)).body.data;
    const after = await patch(agent.id as string, body);
    const changed = Object.keys(after).filter((key) => JSON.stringify(after[key]) !== JSON.stringify(before[key]));
    return { after, changed: changed.filter((key) => key !== 'updated_at') };
  }

  it('an empty body changes nothing', async () => {
    expect((await patchOne({})).changed).toEqual([]);
  });

  it.each([
    ['name', 'Renamed'],
    ['description', 'after'],
    ['description', null],
    ['model', null],
    ['model', 'model-b'],
    ['color', '#abcd'],
    ['color', '#aabbccdd'],
    ['avatar', null],
    ['include_system_prompt', true],
    ['instructions', 'New instructions.'],
    ['pending_trigger_hint', { event: 'ticket.created' }],
    ['pending_trigger_hint', null],
    ['deactivated_reason', 'diagnostics'],
    ['deactivated_reason', null],
    ['deactivated_at', '2026-01-01T00:00:00Z'],
    ['deactivated_at', '2026-01-01T01:00:00.5+01:00'],
    ['deactivated_at', null],
    ['tools', []],
    ['connectors', []],
    ['sub_agents', []],
    ['data_sources', []],
  ])('%s = %p alone', async (field, value) => {
    const { after, changed } = await patchOne({ [field]: value });
    expect(changed.every((key) => key === field || (field === 'tools' && key === 'tools_count') || (field === 'sub_agents' && key === 'sub_agents_count'))).toBe(true);
    if (field === 'deactivated_at' && typeof value === 'string') expect(new Date(after[field] as string).getTime()).toBe(new Date(value).getTime());
    else expect(after[field]).toEqual(value);
  });

  it('handle alone', async () => {
    const next = handle();
    const { after, changed } = await patchOne({ handle: next });
    expect({ handle: after.handle, changed }).toEqual({ handle: next, changed: ['handle'] });
  });

  it.each([false, true])('is_active %p alone', async (value) => {
    const { after } = await patchOne({ is_active: value });
    expect(after.is_active).toBe(value);
    expect(after).toMatchObject({ color: expect.any(String), name: expect.any(String) });
  });

  it('instructions null while instructions_html is set', async () => {
    await patch(agent.id as string, { instructions_html: '<p>html</p>' });
    const { after, changed } = await patchOne({ instructions: null });
    expect({ instructions: after.instructions, changed }).toEqual({ instructions: null, changed: ['instructions'] });
  });

  it.each(['2026-01-01', '2026-01-01T00:00:00', '2026-01-01T00:00Z', 'yesterday', '2026-02-30T00:00:00Z'])(
    'deactivated_at %p is not an RFC 3339 date-time: 422',
    async (value) => {
      const res = await t.http.patch(`${api}/agents/${agent.id}`).set('Authorization', org.auth).send({ deactivated_at: value });
      expect({ status: res.status, code: res.body.error?.code, fields: res.body.error?.details?.fields }).toEqual({
        status: 422,
        code: 'validation_failed',
        fields: { deactivated_at: [expect.stringContaining('RFC 3339')] },
      });
    },
  );
});

describe('one message per problem', () => {
  it('limit=abc reports one message for limit', async () => {
    const res = await t.http.get(`${api}/agents?limit=abc`).set('Authorization', org.auth).expect(422);
    expect(res.body.error.details.fields).toEqual({ limit: ['limit must be an integer from 1 to 100'] });
  });

  it('a missing instructions reports that it is required, not a length rule', async () => {
    const res = await t.http.post(`${api}/agents`).set('Authorization', org.auth).send({ handle: handle(), name: 'x' }).expect(422);
    expect(res.body.error.details.fields).toEqual({ instructions: [expect.stringContaining('required')] });
    expect(JSON.stringify(res.body.error)).not.toMatch(/shorter|characters/);
  });
});

describe('query parameters of every list: all optional, documented values accepted, unknown ones ignored', () => {
  let listOrg: TestOrg;
  let conversationId: string;

  beforeAll(async () => {
    listOrg = await createOrg(t.app);
    const db = t.connection.db;
    // 26 of each: one more than the documented default page size
    for (let i = 0; i < 26; i++) {
      const res = await t.http.post(`${api}/agents`).set('Authorization', listOrg.auth).send({ handle: `listAgent${i}`, name: 'a', instructions: 'x' });
      expect(res.status).toBe(201);
      await insertConnector(db, listOrg.orgId);
      await insertTrigger(db, listOrg.orgId);
      await insertChatbot(db, listOrg.orgId);
    }
    const thread = Array.from({ length: 26 }, (_, i) => ({ role: 'user', content: `message ${i}` }));
    conversationId = await insertConversation(db, listOrg.orgId, {}, thread);
    for (let i = 0; i < 25; i++) await insertConversation(db, listOrg.orgId);
  });

  const get = (path: string) => t.http.get(`${api}${path}`).set('Authorization', listOrg.auth);

  it.each(['/agents', '/connectors', '/triggers', '/chatbots', '/conversations', '/conversations/{conv}/messages'])(
    'GET %s: without cursor and limit, 25 items and a next_cursor; limit 1 and 100 accepted',
    async (template) => {
      const path = template.replace('{conv}', conversationId);
      const page = await get(path).expect(200);
      expect({ count: page.body.data.length, next: typeof page.body.meta.next_cursor }).toEqual({ count: 25, next: 'string' });
      await get(`${path}?limit=1`).expect(200);
      expect((await get(`${path}?limit=100`).expect(200)).body.meta.next_cursor).toBeNull();
      const next = await get(`${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(page.body.meta.next_cursor)}`).expect(200);
      expect(next.body.data.length).toBe(1);
    },
  );

  it.each(['/custom_tools', '/sources', '/team', '/org'])('GET %s without query parameters', async (path) => {
    await get(path).expect(200);
  });

  it.each(['dashboard', 'autonomous', 'embed', 'sub-agent'])('GET /conversations?source=%s', async (source) => {
    await get(`/conversations?source=${source}`).expect(200);
  });

  it.each(['true', 'false', '1', '0'])('GET /conversations?is_simulation=%s&is_onboarding=%s', async (value) => {
    await get(`/conversations?is_simulation=${value}&is_onboarding=${value}`).expect(200);
  });

  it.each(['true', '1', 'false', '0'])('GET /conversations/{id}?include_trigger_payload=%s', async (value) => {
    const res = await get(`/conversations/${conversationId}?include_trigger_payload=${value}`).expect(200);
    expect('trigger_payload' in res.body.data).toBe(value === 'true' || value === '1');
  });

  it('an empty value of a text query parameter is refused exactly where the document says minLength 1', async () => {
    const document = (await t.http.get(`${api}/openapi.json`).expect(200)).body;
    const checked: string[] = [];
    for (const [path, item] of Object.entries<Record<string, { parameters?: Array<{ in: string; name: string; schema?: { type?: string; minLength?: number; format?: string; enum?: unknown[] } }> }>>(document.paths)) {
      if (path.includes('{') || !item.get) continue;
      for (const parameter of item.get.parameters ?? []) {
        // a date-time or an enum states its own form, which the empty value does not have
        if (parameter.in !== 'query' || parameter.schema?.type !== 'string' || parameter.schema.format || parameter.schema.enum) continue;
        const res = await get(`${path}?${parameter.name}=`);
        const refused = res.status === 422 && res.body.error.details.fields[parameter.name] !== undefined;
        checked.push(`${path}?${parameter.name}= ${refused ? 'refused' : 'taken'}`);
        expect({ path, name: parameter.name, refused }).toEqual({ path, name: parameter.name, refused: parameter.schema.minLength === 1 });
      }
    }
    expect(checked).toEqual(expect.arrayContaining(['/conversations?q= refused', '/conversations?agent_id= refused', '/agents?cursor= refused']));
  });

  it('every documented filter of GET /conversations at once', async () => {
    const agents = (await get('/agents?limit=1').expect(200)).body.data;
    const query = new URLSearchParams({
      agent_id: agents[0].id,
      source: 'dashboard',
      model: 'm',
      parent_conversation_id: conversationId,
      conversation_number: '1',
      since: '2026-01-01T00:00:00Z',
      created_after: '2026-01-01T00:00:00Z',
      created_before: '2030-01-01T00:00:00Z',
      last_message_after: '2026-01-01T00:00:00Z',
      last_message_before: '2030-01-01T00:00:00Z',
      ticket_id: '1',
      'metadata[ticketId]': '1',
      q: 'title',
    });
    await get(`/conversations?${query}`).expect(200);
  });

  it.each([
    '/agents',
    '/agents/{agent}',
    '/connectors',
    '/custom_tools',
    '/sources',
    '/triggers',
    '/chatbots',
    '/conversations',
    '/conversations/{conv}',
    '/conversations/{conv}/messages',
    '/team',
    '/org',
    '/analytics/agents/{agent}',
  ])('GET %s?_=1: an unknown query parameter is ignored, on lists and point reads alike', async (template) => {
    const agents = (await get('/agents?limit=1').expect(200)).body.data;
    // analytics defaults its window to "now": fix it, so both answers cover the same window
    const fixed = template.startsWith('/analytics') ? 'since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00Z' : '';
    const path = template.replace('{agent}', agents[0].id).replace('{conv}', conversationId);
    const plain = await get(`${path}?${fixed}`).expect(200);
    const res = await get(`${path}?${fixed}&_=1&unknown[key]=x`).expect(200);
    expect(res.body.data).toEqual(plain.body.data);
  });
});
