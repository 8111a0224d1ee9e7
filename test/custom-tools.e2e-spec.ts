import { eq } from 'drizzle-orm';
import type { Response } from 'supertest';
import { decryptJson } from '../libs/crypto/crypto';
import { newId } from '../libs/ids/ids';
import { SCOPES, type Scope } from '../src/auth/scopes';
import { customTools } from '../src/custom-tools/custom-tools.table';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { FixtureError } from '../src/fixtures/fixture-registry';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { readAgentRow } from './support/agent-rows';
import { insertAgent } from './support/readside-rows';

const BASE = '/api/v1/custom_tools';

/** Every secret this file sends; none may come back in a response or a log line. */
const SECRETS = {
  bearer: 'tok-SECRET-bearer-3f9a1c7e5d',
  rotated: 'tok-SECRET-rotated-8b2d4f6a1e',
  apiKey: 'key-SECRET-apikey-71c3e9b5a2',
  basicUser: 'user-SECRET-basic-5e8a2c4d1f',
  basicPass: 'pass-SECRET-basic-9d1b7f3e6c',
  inError: 'tok-SECRET-in-error-2a6c8e0b4d',
  fixture: 'tok-SECRET-fixture-4c2e6a8b0d',
};

let t: TestApp;
const bodies: string[] = [];

function record(res: Response): Response {
  bodies.push(res.text ?? '');
  return res;
}

const api = {
  get: async (org: { auth: string }, path: string) => record(await t.http.get(path).set('Authorization', org.auth)),
  post: async (org: { auth: string }, body: unknown, path = BASE) => record(await t.http.post(path).set('Authorization', org.auth).send(body as object)),
  patch: async (org: { auth: string }, path: string, body: unknown) => record(await t.http.patch(path).set('Authorization', org.auth).send(body as object)),
  delete: async (org: { auth: string }, path: string) => record(await t.http.delete(path).set('Authorization', org.auth)),
};

function toolBody(overrides: Record<string, unknown> = {}) {
  return {
    label: 'Zendesk Get Ticket',
    description: 'Fetches one Zendesk ticket by id.',
    method: 'GET',
    url: 'https://acme.zendesk.com/api/v2/tickets/{{ticket_id}}.json',
    parameters: [{ name: 'ticket_id', type: 'integer', required: true, in: 'query' }],
    ...overrides,
  };
}

async function createTool(org: TestOrg, overrides: Record<string, unknown> = {}) {
  const res = await api.post(org, toolBody(overrides));
  expect(res.status).toBe(201);
  return res.body.data;
}

async function storedRow(id: string) {
  const [row] = await t.connection.db.select().from(customTools).where(eq(customTools.id, id));
  return row;
}

beforeAll(async () => {
  t = await createTestApp();
});

afterAll(async () => {
  await t.close();
});

describe('POST /custom_tools creates a tool with the contract defaults; GET lists and fetches it', () => {
  it('returns 201 with defaults: type read, parameter type string, required false, in query for GET, headers {}, parameters []', async () => {
    const org = await createOrg(t.app);
    const res = await api.post(org, {
      label: 'Weather Lookup',
      description: 'Current weather for a city.',
      method: 'GET',
      url: 'https://api.weather.example.com/v1/current?city={{city}}',
      parameters: [{ name: 'city' }],
    });
    expect(res.status).toBe(201);
    const tool = res.body.data;
    expect(tool).toEqual({
      id: expect.stringMatching(/^tool_[a-f0-9]{24}$/),
      name: 'custom_weather_lookup',
      label: 'Weather Lookup',
      description: 'Current weather for a city.',
      type: 'read',
      method: 'GET',
      url: 'https://api.weather.example.com/v1/current?city={{city}}',
      headers: {},
      body_template: null,
      parameters: [{ name: 'city', type: 'string', required: false, in: 'query' }],
      response_mapping: null,
      auth: { type: 'none', header_name: null },
      group: null,
      is_active: true,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });

    const bare = await api.post(org, { label: 'Ping', description: 'Ping.', method: 'POST', url: 'https://example.com/ping' });
    expect(bare.status).toBe(201);
    expect(bare.body.data.parameters).toEqual([]);
    expect(bare.body.data.headers).toEqual({});

    const fetched = await api.get(org, `${BASE}/${tool.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body.data).toEqual(tool);
  });

  it('defaults a parameter to in=body for every method but GET', async () => {
    const org = await createOrg(t.app);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const tool = await createTool(org, { label: `Body ${method}`, method, url: 'https://example.com/items', parameters: [{ name: 'item' }] });
      expect(tool.parameters).toEqual([{ name: 'item', type: 'string', required: false, in: 'body' }]);
    }
  });

  it('lists newest first with cursor pagination and no totals', async () => {
    const org = await createOrg(t.app);
    const first = await createTool(org, { label: 'List One' });
    const second = await createTool(org, { label: 'List Two' });
    const third = await createTool(org, { label: 'List Three' });
    const page1 = await api.get(org, `${BASE}?limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((tool: { id: string }) => tool.id)).toEqual([third.id, second.id]);
    expect(typeof page1.body.meta.next_cursor).toBe('string');
    expect(page1.body.meta).not.toHaveProperty('total');
    const page2 = await api.get(org, `${BASE}?limit=2&cursor=${encodeURIComponent(page1.body.meta.next_cursor)}`);
    expect(page2.body.data.map((tool: { id: string }) => tool.id)).toEqual([first.id]);
    expect(page2.body.meta.next_cursor).toBeNull();
    expect((await api.get(org, `${BASE}?limit=0`)).status).toBe(422);
    expect((await api.get(org, `${BASE}?cursor=garbage`)).body.error.code).toBe('validation_failed');
  });

  it('answers 404 not_found for unknown and malformed ids', async () => {
    const org = await createOrg(t.app);
    for (const id of [newId('customTool'), 'tool_123', 'nonsense', newId('customTool').slice(5)]) {
      const res = await api.get(org, `${BASE}/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });
});

describe('name is generated from label, unique within the organization, immutable', () => {
  it('slugs the label to lower snake_case with the custom_ prefix', async () => {
    const org = await createOrg(t.app);
    expect((await createTool(org, { label: 'HubSpot: Search Contacts (v2)!' })).name).toBe('custom_hubspot_search_contacts_v2');
    expect((await createTool(org, { label: 'Crème Brûlée  API' })).name).toBe('custom_creme_brulee_api');
    expect((await createTool(org, { label: '日本語' })).name).toBe('custom_tool');
  });

  it('adds a numeric suffix on collision, per organization', async () => {
    const org = await createOrg(t.app);
    const names = [];
    for (let i = 0; i < 3; i++) names.push((await createTool(org, { label: 'Jira Create Issue' })).name);
    expect(names).toEqual(['custom_jira_create_issue', 'custom_jira_create_issue_2', 'custom_jira_create_issue_3']);
    const other = await createOrg(t.app);
    expect((await createTool(other, { label: 'Jira Create Issue' })).name).toBe('custom_jira_create_issue');
  });

  it('stays unique under concurrent creates with the same label', async () => {
    const org = await createOrg(t.app);
    const results = await Promise.all(Array.from({ length: 6 }, () => api.post(org, toolBody({ label: 'Race Tool' }))));
    expect(results.map((res) => res.status)).toEqual(Array(6).fill(201));
    const names = results.map((res) => res.body.data.name).sort();
    expect(new Set(names).size).toBe(6);
    expect(names).toContain('custom_race_tool');
  });

  it('rejects name in a PATCH body with 422 naming the field; a new label keeps the name', async () => {
    const org = await createOrg(t.app);
    const tool = await createTool(org, { label: 'Immutable Name' });
    for (const name of ['custom_other', null, '']) {
      const res = await api.patch(org, `${BASE}/${tool.id}`, { name });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      expect(Object.keys(res.body.error.details.fields)).toEqual(['name']);
    }
    const relabeled = await api.patch(org, `${BASE}/${tool.id}`, { label: 'Renamed Label' });
    expect(relabeled.status).toBe(200);
    expect(relabeled.body.data).toMatchObject({ label: 'Renamed Label', name: 'custom_immutable_name' });
  });

  it('rejects a name in POST too (it is generated)', async () => {
    const org = await createOrg(t.app);
    const res = await api.post(org, toolBody({ name: 'custom_mine' }));
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toHaveProperty('name');
  });
});

describe('url must be an absolute http(s) URL whose host is not an internal literal', () => {
  it.each([
    'ftp://example.com/file',
    '/relative/path',
    'example.com/no-scheme',
    'http://127.0.0.1/admin',
    'http://localhost:8080/',
    'http://[::1]/',
    'http://10.0.0.5/',
    'http://172.16.3.4/',
    'http://192.168.0.10/',
    'http://169.254.169.254/latest/meta-data/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://[fd00:ec2::254]/',
    'http://[fe80::1]/',
    'http://0.0.0.0/',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://[::ffff:127.0.0.1]/',
    'https://user:pw@example.com/',
    'https://{{host}}/path',
  ])('%s → 422 naming url', async (url) => {
    const org = await createOrg(t.app);
    const res = await api.post(org, toolBody({ url, parameters: [{ name: 'host' }, { name: 'ticket_id' }] }));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(Object.keys(res.body.error.details.fields)).toEqual(['url']);
  });

  it('applies the same rules on PATCH', async () => {
    const org = await createOrg(t.app);
    const tool = await createTool(org);
    const res = await api.patch(org, `${BASE}/${tool.id}`, { url: 'http://169.254.169.254/' });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toHaveProperty('url');
    expect((await api.get(org, `${BASE}/${tool.id}`)).body.data.url).toBe(tool.url);
  });
});

describe('placeholders, body_template, headerName and method', () => {
  it('a {{param}} in url or body_template needs no declared parameter: it is kept as written', async () => {
    const org = await createOrg(t.app);
    const res = await api.post(org, toolBody({ url: 'https://example.com/{{missing}}', parameters: [] }));
    expect(res.status).toBe(201);
    expect(res.body.data.url).toBe('https://example.com/{{missing}}');
    const body = await api.post(
      org,
      toolBody({ method: 'POST', url: 'https://example.com/x', parameters: [{ name: 'a' }], body_template: '{"a": "{{a}}", "b": {{b}}}' }),
    );
    expect(body.status).toBe(201);
    expect(body.body.data.body_template).toBe('{"a": "{{a}}", "b": {{b}}}');
  });

  it('body_template must be valid JSON once placeholders are substituted (inside strings as text, bare as a JSON value)', async () => {
    const org = await createOrg(t.app);
    const params = [
      { name: 'title', in: 'body' },
      { name: 'count', type: 'integer', in: 'body' },
      { name: 'urgent', type: 'boolean', in: 'body' },
    ];
    const ok = await api.post(
      org,
      toolBody({
        label: 'Create Thing',
        method: 'POST',
        url: 'https://example.com/things',
        parameters: params,
        body_template: '{"title": "New: {{title}}", "count": {{count}}, "flags": {"urgent": {{ urgent }}}, "tags": ["{{title}}"]}',
      }),
    );
    expect(ok.status).toBe(201);
    expect(ok.body.data.body_template).toContain('{{count}}');

    for (const template of ['{"title": {{title}', '{"title": "{{title}}",}', 'not json {{title}}', '{{title}} {{count}}']) {
      const bad = await api.post(org, toolBody({ method: 'POST', url: 'https://example.com/things', parameters: params, body_template: template }));
      expect(bad.status).toBe(422);
      expect(Object.keys(bad.body.error.details.fields)).toEqual(['body_template']);
    }
  });

  it('headerName defaults to the parameter name when in is header; a given one must be an HTTP token, named by its index', async () => {
    const org = await createOrg(t.app);
    const res = await api.post(org, toolBody({ parameters: [{ name: 'ticket_id' }, { name: 'X-Tenant', in: 'header' }] }));
    expect(res.status).toBe(201);
    expect(res.body.data.parameters[1]).toEqual({ name: 'X-Tenant', type: 'string', required: false, in: 'header', headerName: 'X-Tenant' });
    const bad = await api.post(org, toolBody({ parameters: [{ name: 'ticket_id' }, { name: 'tenant', in: 'header', headerName: 'X Tenant' }] }));
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.details.fields)).toEqual(['parameters[1].headerName']);
    const ok = await api.post(org, toolBody({ parameters: [{ name: 'ticket_id' }, { name: 'tenant', in: 'header', headerName: 'X-Tenant' }] }));
    expect(ok.status).toBe(201);
    expect(ok.body.data.parameters[1]).toEqual({ name: 'tenant', type: 'string', required: false, in: 'header', headerName: 'X-Tenant' });
  });

  it('rejects duplicate and malformed parameter names, bad types and bad locations, naming each field', async () => {
    const org = await createOrg(t.app);
    const dup = await api.post(org, toolBody({ parameters: [{ name: 'ticket_id' }, { name: 'ticket_id' }] }));
    expect(dup.body.error.details.fields).toHaveProperty(['parameters[1].name']);
    const malformed = await api.post(org, toolBody({ url: 'https://example.com/x', parameters: [{ name: 'has space' }] }));
    expect(malformed.body.error.details.fields).toHaveProperty(['parameters[0].name']);
    const badType = await api.post(org, toolBody({ parameters: [{ name: 'ticket_id', type: 'object', in: 'path' }] }));
    expect(badType.status).toBe(422);
    expect(badType.body.error.details.fields).toHaveProperty(['parameters[0].type']);
    expect(badType.body.error.details.fields).toHaveProperty(['parameters[0].in']);
  });

  it('limits method to the five verbs and type to read/write; requires label, description, method, url', async () => {
    const org = await createOrg(t.app);
    for (const method of ['HEAD', 'OPTIONS', 'get', 'TRACE']) {
      const res = await api.post(org, toolBody({ method }));
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual(['method']);
    }
    expect((await api.post(org, toolBody({ type: 'admin' }))).body.error.details.fields).toHaveProperty('type');
    const missing = await api.post(org, {});
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body.error.details.fields).sort()).toEqual(['description', 'label', 'method', 'url']);
    expect((await api.post(org, toolBody({ unknown_field: 1 }))).status).toBe(422);
  });

  it('headers must map header names to strings, and keep credentials out of plain headers', async () => {
    const org = await createOrg(t.app);
    const ok = await api.post(org, toolBody({ headers: { Accept: 'application/json', 'X-Client': 'agent' } }));
    expect(ok.status).toBe(201);
    expect(ok.body.data.headers).toEqual({ Accept: 'application/json', 'X-Client': 'agent' });
    const notString = await api.post(org, toolBody({ headers: { Accept: 5 } }));
    expect(notString.status).toBe(422);
    expect(notString.body.error.details.fields).toHaveProperty(['headers.Accept']);
    for (const name of ['Authorization', 'cookie', 'Proxy-Authorization']) {
      const authHeader = await api.post(org, toolBody({ headers: { [name]: 'Bearer x' } }));
      expect(authHeader.status).toBe(422);
      // the message says why: plain headers are stored unencrypted and returned
      expect(authHeader.body.error.details.fields[`headers.${name}`][0]).toMatch(/stored unencrypted and returned/);
    }
  });
});

describe('secrets: credentials encrypted at rest, never returned, logged or echoed', () => {
  it('stores bearer credentials as AES-256-GCM bound to the tool id; the response shows only {type, header_name}', async () => {
    const org = await createOrg(t.app);
    const res = await api.post(org, toolBody({ auth: { type: 'bearer', credentials: { token: SECRETS.bearer } } }));
    expect(res.status).toBe(201);
    expect(res.body.data.auth).toEqual({ type: 'bearer', header_name: null });
    const row = await storedRow(res.body.data.id);
    expect(row.credentialsCiphertext).toBeTruthy();
    expect(row.credentialsCiphertext).not.toContain(SECRETS.bearer);
    expect(JSON.stringify(row)).not.toContain(SECRETS.bearer);
    expect(decryptJson(t.config.encryptionKey, row.credentialsCiphertext!, row.id)).toEqual({ token: SECRETS.bearer });
    // bound to its tool: the same ciphertext does not open as another tool's
    expect(() => decryptJson(t.config.encryptionKey, row.credentialsCiphertext!, newId('customTool'))).toThrow();
  });

  it('api_key: header_name defaults to X-API-Key, or comes from credentials.header_name', async () => {
    const org = await createOrg(t.app);
    const byDefault = await createTool(org, { label: 'Key Default', auth: { type: 'api_key', credentials: { apiKey: SECRETS.apiKey } } });
    expect(byDefault.auth).toEqual({ type: 'api_key', header_name: 'X-API-Key' });
    const custom = await createTool(org, {
      label: 'Key Custom',
      auth: { type: 'api_key', credentials: { apiKey: SECRETS.apiKey, header_name: 'X-Acme-Token' } },
    });
    expect(custom.auth).toEqual({ type: 'api_key', header_name: 'X-Acme-Token' });
    const basic = await createTool(org, {
      label: 'Basic Auth',
      auth: { type: 'basic', credentials: { username: SECRETS.basicUser, password: SECRETS.basicPass } },
    });
    expect(basic.auth).toEqual({ type: 'basic', header_name: null });
    const row = await storedRow(basic.id);
    expect(decryptJson(t.config.encryptionKey, row.credentialsCiphertext!, basic.id)).toEqual({ username: SECRETS.basicUser, password: SECRETS.basicPass });
  });

  it('refuses an unknown auth type, unknown credentials fields and non-string secrets, never echoing a secret', async () => {
    const org = await createOrg(t.app);
    const cases: Array<[unknown, string]> = [
      [{ type: 'oauth', credentials: { token: SECRETS.inError } }, 'auth.type'],
      [{ type: 'api_key', credentials: { apiKey: SECRETS.inError, header_name: 'bad header' } }, 'auth.credentials.header_name'],
      [{ type: 'bearer', credentials: { token: SECRETS.inError, extra: SECRETS.inError } }, 'auth.credentials'],
      [{ type: 'bearer', credentials: { token: 12345 } }, 'auth.credentials.token'],
      // the document's minLength 1, kept whatever the type (a bearer tool used to drop an empty one silently)
      [{ type: 'bearer', credentials: { token: SECRETS.inError, header_name: '' } }, 'auth.credentials.header_name'],
    ];
    for (const [auth, field] of cases) {
      const res = await api.post(org, toolBody({ auth }));
      expect(res.status).toBe(422);
      expect(res.body.error.details.fields).toHaveProperty([field]);
      expect(res.text).not.toContain(SECRETS.inError);
    }
  });

  it('an unknown key inside auth.credentials is refused without its name (a pasted secret), in the API and the fixture loader', async () => {
    const org = await createOrg(t.app);
    // sent as text: `constructor` takes the path of keys the DTO builder drops
    for (const key of [SECRETS.inError, 'constructor']) {
      const raw = `{"label":"Unnamed Keys","description":"d","method":"GET","url":"https://api.example.com/x","auth":{"type":"bearer","credentials":{"token":"t",${JSON.stringify(key)}:"v","zz_unknown_field":"w"}}}`;
      for (const res of [
        await t.http.post(BASE).set('Authorization', org.auth).set('Content-Type', 'application/json').send(raw),
        await t.http.patch(`${BASE}/${(await createTool(org)).id}`).set('Authorization', org.auth).set('Content-Type', 'application/json').send(raw),
      ]) {
        expect(res.status).toBe(422);
        expect(Object.keys(res.body.error.details.fields)).toEqual(['auth.credentials']);
        expect(res.body.error.details.fields['auth.credentials']).toEqual([expect.stringMatching(/^holds a field other than token, apiKey/)]);
        expect(res.text).not.toContain(key);
        expect(res.text).not.toContain('zz_unknown_field');
      }
    }
    const orgId = newId('org');
    const credentials = { token: 't', [SECRETS.inError]: 'v' };
    await expect(
      t.app.get(FixtureLoader).load({ orgs: [{ id: orgId, name: 'Unnamed', slug: `unnamed-${orgId.slice(-8)}`, custom_tools: [{ label: 'Fixture Tool', description: 'd', method: 'GET', url: 'https://api.example.com/x', auth: { type: 'bearer' }, credentials }] }] }),
    ).rejects.toMatchObject({ path: 'orgs[0].custom_tools[0].credentials', problem: expect.not.stringContaining(SECRETS.inError) });
  });

  it('PATCH with credentials rotates them; omitting them keeps them; a type change without them drops them', async () => {
    const org = await createOrg(t.app);
    const tool = await createTool(org, { auth: { type: 'bearer', credentials: { token: SECRETS.bearer } } });
    const before = (await storedRow(tool.id)).credentialsCiphertext;

    const kept = await api.patch(org, `${BASE}/${tool.id}`, { description: 'New description.', auth: { type: 'bearer' } });
    expect(kept.status).toBe(200);
    expect((await storedRow(tool.id)).credentialsCiphertext).toBe(before);
    const untouched = await api.patch(org, `${BASE}/${tool.id}`, { label: 'Still Bearer' });
    expect(untouched.body.data.auth).toEqual({ type: 'bearer', header_name: null });
    expect((await storedRow(tool.id)).credentialsCiphertext).toBe(before);

    const rotated = await api.patch(org, `${BASE}/${tool.id}`, { auth: { type: 'bearer', credentials: { token: SECRETS.rotated } } });
    expect(rotated.status).toBe(200);
    const after = (await storedRow(tool.id)).credentialsCiphertext!;
    expect(after).not.toBe(before);
    expect(decryptJson(t.config.encryptionKey, after, tool.id)).toEqual({ token: SECRETS.rotated });

    const typeOnly = await api.patch(org, `${BASE}/${tool.id}`, { auth: { type: 'api_key' } });
    expect(typeOnly.status).toBe(200);
    expect(typeOnly.body.data.auth).toEqual({ type: 'api_key', header_name: 'X-API-Key' });
    expect((await storedRow(tool.id)).credentialsCiphertext).toBeNull();

    const switched = await api.patch(org, `${BASE}/${tool.id}`, { auth: { type: 'api_key', credentials: { apiKey: SECRETS.apiKey, header_name: 'X-Key' } } });
    expect(switched.body.data.auth).toEqual({ type: 'api_key', header_name: 'X-Key' });

    const none = await api.patch(org, `${BASE}/${tool.id}`, { auth: { type: 'none' } });
    expect(none.status).toBe(200);
    expect(none.body.data.auth).toEqual({ type: 'none', header_name: null });
    expect((await storedRow(tool.id)).credentialsCiphertext).toBeNull();
  });
});

describe('plan cap limits.custom_tool_slots, is_active, response_mapping and group', () => {
  it('creating beyond the cap returns 422 naming the limit', async () => {
    const org = await createOrg(t.app, { limits: { custom_tool_slots: 2 } });
    await createTool(org, { label: 'Slot One' });
    await createTool(org, { label: 'Slot Two' });
    const res = await api.post(org, toolBody({ label: 'Slot Three' }));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details).toEqual({ limit: 'custom_tool_slots', max: 2, fields: { 'limits.custom_tool_slots': [expect.any(String)] }, field_count: 1 });
    expect(res.body.error.message).toContain('custom_tool_slots');
    expect((await api.get(org, BASE)).body.data).toHaveLength(2);
  });

  it('holds under concurrent creates', async () => {
    const org = await createOrg(t.app, { limits: { custom_tool_slots: 3 } });
    const results = await Promise.all(Array.from({ length: 7 }, (_, i) => api.post(org, toolBody({ label: `Concurrent ${i}` }))));
    const statuses = results.map((res) => res.status).sort();
    expect(statuses).toEqual([201, 201, 201, 422, 422, 422, 422]);
    expect((await api.get(org, BASE)).body.data).toHaveLength(3);
  });

  it('a cap of 0 forbids any custom tool; null is unlimited', async () => {
    const none = await createOrg(t.app, { limits: { custom_tool_slots: 0 } });
    expect((await api.post(none, toolBody())).status).toBe(422);
    const unlimited = await createOrg(t.app, { limits: { custom_tool_slots: null } });
    expect((await api.post(unlimited, toolBody())).status).toBe(201);
  });

  it('stores and returns response_mapping and group; PATCH toggles is_active and clears nullable fields', async () => {
    const org = await createOrg(t.app);
    const tool = await createTool(org, {
      response_mapping: 'data.items',
      group: { name: 'Zendesk', icon: 'ticket', color: '#03363d' },
    });
    expect(tool.response_mapping).toBe('data.items');
    expect(tool.group).toEqual({ name: 'Zendesk', icon: 'ticket', color: '#03363d' });

    const off = await api.patch(org, `${BASE}/${tool.id}`, { is_active: false, response_mapping: 'results', group: { name: 'Support' } });
    expect(off.status).toBe(200);
    expect(off.body.data).toMatchObject({ is_active: false, response_mapping: 'results', group: { name: 'Support', icon: null, color: null } });
    expect((await api.get(org, `${BASE}/${tool.id}`)).body.data.is_active).toBe(false);

    const cleared = await api.patch(org, `${BASE}/${tool.id}`, { response_mapping: null, group: null, is_active: true });
    expect(cleared.body.data).toMatchObject({ is_active: true, response_mapping: null, group: null });
    expect(new Date(cleared.body.data.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(tool.updated_at).getTime());

    for (const body of [{ is_active: 'yes' }, { label: null }, { method: null }, { parameters: null }, { url: 5 }]) {
      expect((await api.patch(org, `${BASE}/${tool.id}`, body)).status).toBe(422);
    }
  });

  it('PATCH validates the merged definition: a new url is judged with the stored parameters, a new method with the stored body', async () => {
    const org = await createOrg(t.app);
    const tool = await createTool(org, { headers: { Accept: 'application/json' } });
    const res = await api.patch(org, `${BASE}/${tool.id}`, { parameters: [{ name: 'a' }, { name: 'a' }] });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toHaveProperty(['parameters[1].name']);
    const internal = await api.patch(org, `${BASE}/${tool.id}`, { url: 'http://[::1]/{{ticket_id}}' });
    expect(Object.keys(internal.body.error.details.fields)).toEqual(['url']);
  });
});

describe('DELETE removes the tool and its references from every agent of the organization', () => {
  it('cleans three agents (one soft-deleted) in one transaction; other tools and organizations are untouched; a second DELETE is 404', async () => {
    const org = await createOrg(t.app);
    const other = await createOrg(t.app);
    const tool = await createTool(org, { label: 'Cascade Me' });
    const keep = await createTool(org, { label: 'Keep Me' });
    const ref = { name: tool.name, connector_id: null };
    const keepRef = { name: keep.name, connector_id: null };
    const connectorRef = { name: 'zendesk_get_ticket', connector_id: 'connector_0123456789abcdef01234567' };

    const live = await insertAgent(t.connection.db, org.orgId, { tools: [ref, keepRef, connectorRef] });
    const onlyThis = await insertAgent(t.connection.db, org.orgId, { tools: [{ name: tool.name }] });
    const trashed = await insertAgent(t.connection.db, org.orgId, { tools: [connectorRef, ref], deletedAt: new Date() });
    const unrelated = await insertAgent(t.connection.db, org.orgId, { tools: [keepRef] });
    const otherOrgAgent = await insertAgent(t.connection.db, other.orgId, { tools: [{ name: tool.name, connector_id: null }] });

    const res = await api.delete(org, `${BASE}/${tool.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: tool.id, deleted: true });

    expect((await readAgentRow(t, org.orgId, live))!.tools).toEqual([keepRef, connectorRef]);
    expect((await readAgentRow(t, org.orgId, onlyThis))!.tools).toEqual([]);
    expect((await readAgentRow(t, org.orgId, trashed))!.tools).toEqual([connectorRef]);
    expect((await readAgentRow(t, org.orgId, unrelated))!.tools).toEqual([keepRef]);
    expect((await readAgentRow(t, other.orgId, otherOrgAgent))!.tools).toEqual([{ name: tool.name, connector_id: null }]);

    expect((await api.get(org, `${BASE}/${tool.id}`)).status).toBe(404);
    expect(await storedRow(tool.id)).toBeUndefined();
    const again = await api.delete(org, `${BASE}/${tool.id}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
    expect((await api.get(org, `${BASE}/${keep.id}`)).status).toBe(200);
  });

  it('concurrent DELETEs of one tool: one 200, one 404, no 500', async () => {
    const org = await createOrg(t.app);
    const tool = await createTool(org);
    await insertAgent(t.connection.db, org.orgId, { tools: [{ name: tool.name }] });
    const results = await Promise.all([api.delete(org, `${BASE}/${tool.id}`), api.delete(org, `${BASE}/${tool.id}`)]);
    expect(results.map((res) => res.status).sort()).toEqual([200, 404]);
  });

  it('frees the name and the plan slot', async () => {
    const org = await createOrg(t.app, { limits: { custom_tool_slots: 1 } });
    const tool = await createTool(org, { label: 'Reuse Me' });
    expect((await api.delete(org, `${BASE}/${tool.id}`)).status).toBe(200);
    expect((await createTool(org, { label: 'Reuse Me' })).name).toBe('custom_reuse_me');
  });
});

describe('scopes: custom_tools:read / :write / :delete', () => {
  const without = (scope: Scope) => SCOPES.filter((candidate) => candidate !== scope);

  it('each endpoint answers 403 insufficient_scope without its scope', async () => {
    const org = await createOrg(t.app);
    const tool = await createTool(org);
    const noRead = await org.key(without('custom_tools:read'));
    const noWrite = await org.key(without('custom_tools:write'));
    const noDelete = await org.key(without('custom_tools:delete'));
    const checks: Array<Promise<Response>> = [
      api.get(noRead, BASE),
      api.get(noRead, `${BASE}/${tool.id}`),
      api.post(noWrite, toolBody({ label: 'Denied' })),
      api.patch(noWrite, `${BASE}/${tool.id}`, { label: 'Denied' }),
      api.delete(noDelete, `${BASE}/${tool.id}`),
    ];
    for (const res of await Promise.all(checks)) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
    }
    expect((await api.get(org, `${BASE}/${tool.id}`)).body.data.label).toBe(tool.label);

    const onlyRead = await org.key(['custom_tools:read']);
    expect((await api.get(onlyRead, BASE)).status).toBe(200);
    const onlyDelete = await org.key(['custom_tools:delete']);
    expect((await api.delete(onlyDelete, `${BASE}/${tool.id}`)).status).toBe(200);
  });

  it('requires a key at all (401)', async () => {
    const res = await t.http.get(BASE);
    expect(res.status).toBe(401);
  });
});

describe('organization isolation', () => {
  it("another organization sees none of the tools: 404 for their ids, an empty list", async () => {
    const a = await createOrg(t.app);
    const b = await createOrg(t.app);
    const tool = await createTool(a);
    expect((await api.get(b, BASE)).body.data).toEqual([]);
    for (const res of [
      await api.get(b, `${BASE}/${tool.id}`),
      await api.patch(b, `${BASE}/${tool.id}`, { label: 'Hijack' }),
      await api.delete(b, `${BASE}/${tool.id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await api.get(a, `${BASE}/${tool.id}`)).body.data.label).toBe(tool.label);
  });
});

describe('fixture section custom_tools', () => {
  it('loads tools with credentials stored encrypted, generated names, and upserts by id', async () => {
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    const toolId = newId('customTool');
    const fixture = {
      orgs: [
        {
          id: orgId,
          name: 'Fixture Tools Org',
          slug: `fixture-tools-${orgId.slice(-8)}`,
          custom_tools: [
            {
              id: toolId,
              label: 'Fixture Lookup',
              description: 'Looks things up.',
              method: 'GET',
              url: 'https://api.example.com/{{q}}',
              parameters: [{ name: 'q' }],
              auth: { type: 'bearer', header_name: null },
              credentials: { token: SECRETS.fixture },
              is_active: false,
            },
            { name: 'custom_fixture_lookup_explicit', label: 'Fixture Lookup', description: 'x', method: 'POST', url: 'https://api.example.com/' },
          ],
        },
      ],
    };
    await loader.load(fixture);
    await loader.load(fixture); // twice: upsert, no duplicate, name kept
    const row = await storedRow(toolId);
    expect(row).toMatchObject({ orgId, name: 'custom_fixture_lookup', authType: 'bearer', isActive: false });
    expect(decryptJson(t.config.encryptionKey, row.credentialsCiphertext!, toolId)).toEqual({ token: SECRETS.fixture });
    const all = await t.connection.db.select().from(customTools).where(eq(customTools.orgId, orgId));
    expect(all.map((tool) => tool.name).sort()).toEqual(['custom_fixture_lookup', 'custom_fixture_lookup_explicit']);
  });

  it('takes auth.credentials as POST does, and the secrets in one place only', async () => {
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    const toolId = newId('customTool');
    const tool = { id: toolId, label: 'Posted Shape', description: 'x', method: 'GET', url: 'https://api.example.com/' };
    const fixture = (item: object) => ({ orgs: [{ id: orgId, name: 'Posted Shape Org', slug: `posted-shape-${orgId.slice(-8)}`, custom_tools: [item] }] });
    await loader.load(fixture({ ...tool, auth: { type: 'api_key', credentials: { apiKey: SECRETS.fixture, header_name: 'X-Acme-Key' } } }));
    const row = await storedRow(toolId);
    expect(row).toMatchObject({ authType: 'api_key', authHeaderName: 'X-Acme-Key' });
    expect(decryptJson(t.config.encryptionKey, row.credentialsCiphertext!, toolId)).toEqual({ apiKey: SECRETS.fixture });

    const twice = fixture({ ...tool, auth: { type: 'bearer', credentials: { token: SECRETS.fixture } }, credentials: { token: SECRETS.fixture } });
    await expect(loader.load(twice)).rejects.toMatchObject({ path: 'orgs[0].custom_tools[0].credentials' });
    await expect(loader.load(fixture({ ...tool, auth: null }))).rejects.toMatchObject({ path: 'orgs[0].custom_tools[0].auth' });
  });

  it('rejects a bad tool naming the path, writing nothing', async () => {
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    const bad = {
      orgs: [
        {
          id: orgId,
          name: 'Bad Fixture',
          slug: `bad-fixture-${orgId.slice(-8)}`,
          custom_tools: [
            { label: 'Fine', description: 'x', method: 'GET', url: 'https://example.com/' },
            { label: 'Internal', description: 'x', method: 'GET', url: 'http://10.0.0.1/' },
          ],
        },
      ],
    };
    await expect(loader.load(bad)).rejects.toThrow(FixtureError);
    await expect(loader.load(bad)).rejects.toMatchObject({ path: 'orgs[0].custom_tools[1].url' });
    const badHeader = { orgs: [{ ...bad.orgs[0], custom_tools: [{ label: 'A', description: 'x', method: 'GET', url: 'https://e.com/', headers: { Cookie: 'c' } }] }] };
    await expect(loader.load(badHeader)).rejects.toMatchObject({ path: 'orgs[0].custom_tools[0].headers.Cookie' });
    for (const id of [newId('agent'), newId('customTool').slice('tool_'.length), newId('customTool').toUpperCase()]) {
      const badId = { orgs: [{ ...bad.orgs[0], custom_tools: [{ id, label: 'A', description: 'x', method: 'GET', url: 'https://e.com/' }] }] };
      await expect(loader.load(badId)).rejects.toMatchObject({ message: 'orgs[0].custom_tools[0].id: must be tool_<24 lowercase hex>' });
    }
    expect(await t.connection.db.select().from(customTools).where(eq(customTools.orgId, orgId))).toEqual([]);
  });

  it('the demo data file is a valid custom_tools section', async () => {
    const demo = (await import('../src/custom-tools/custom-tools.demo.json')).default as Array<Record<string, unknown>>;
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    const fixture = (tools: unknown[]) => ({ orgs: [{ id: orgId, name: 'Demo Tools', slug: `demo-tools-${orgId.slice(-8)}`, custom_tools: tools }] });
    expect(() => loader.parse(fixture(demo))).not.toThrow();
    // written without its fixed ids, so the test also passes on a database that already holds the demo
    await loader.load(fixture(demo.map(({ id: _id, ...rest }) => rest)));
    const rows = await t.connection.db.select().from(customTools).where(eq(customTools.orgId, orgId));
    expect(rows).toHaveLength(demo.length);
  });
});

describe('OpenAPI document', () => {
  it('describes every custom tool operation', async () => {
    const res = await t.http.get('/api/v1/openapi.json');
    const paths = res.body.paths;
    const list = paths['/api/v1/custom_tools'] ?? paths['/custom_tools'];
    const item = paths['/api/v1/custom_tools/{id}'] ?? paths['/custom_tools/{id}'];
    expect(list.get.operationId).toBe('listCustomTools');
    expect(list.post.operationId).toBe('createCustomTool');
    expect(item.get.operationId).toBe('getCustomTool');
    expect(item.patch.operationId).toBe('updateCustomTool');
    expect(item.delete.operationId).toBe('deleteCustomTool');
    expect(JSON.stringify(res.body.components.schemas.CustomToolDto ?? res.body.components.schemas.CustomTool)).not.toContain('credentials');
  });
});

describe('no secret ever leaves the service', () => {
  it('no response body and no log line of this run contains a secret it used', () => {
    expect(bodies.length).toBeGreaterThan(50);
    const logs = t.logs.join('\n');
    const responses = bodies.join('\n');
    for (const secret of Object.values(SECRETS)) {
      expect(responses).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});
