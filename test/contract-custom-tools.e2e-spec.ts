import { and, eq } from 'drizzle-orm';
import type { Response } from 'supertest';
import { decryptJson } from '../libs/crypto/crypto';
import { newId } from '../libs/ids/ids';
import { BOUNDS } from '../src/common/input-bounds';
import { customTools } from '../src/custom-tools/custom-tools.table';
import { sources } from '../src/database/sources.table';
import { idempotencyRecords } from '../src/idempotency/idempotency.table';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { createOrg, type TestOrg } from './support/factories';
import { documentedResponse, operationsOf, ResponseValidator, type OpenApiDocument, type Operation } from './support/openapi-contract';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The contract's request tables for custom tools and sources, walked field by
 * field: every optional field omitted, null where the contract makes it
 * nullable, every documented enum value — each answered with success, the
 * documented default in the response, and a body the served document
 * describes. Then one block per promise of the served document that concerns
 * these resources (what generated clients rely on), and the proof that dropped secrets go nowhere.
 */

const TOOLS = '/api/v1/custom_tools';
const SOURCES = '/api/v1/sources';

/** Secrets sent in fields their auth type does not use: dropped, so they must appear nowhere. */
const DROPPED = {
  token: 'tok-DROPPED-contract-5b1e9c3a7d',
  apiKey: 'key-DROPPED-contract-8e2a6f4c1b',
  username: 'usr-DROPPED-contract-3c7d1a9e5f',
  password: 'pwd-DROPPED-contract-6a4b2e8c0d',
};
/** Secrets that are kept (encrypted) but never returned or logged. */
const KEPT = {
  token: 'tok-KEPT-contract-2f8b4d6a0c',
  username: 'usr-KEPT-contract-7b9d1f3a5c',
  apiKey: 'key-KEPT-contract-9d3c5e7b1a',
  password: 'pwd-KEPT-contract-4e6a8c0b2d',
};

let t: TestApp;
let validator: ResponseValidator;
let operations: Operation[];
const bodies: string[] = [];

beforeAll(async () => {
  t = await createTestApp();
  const document = (await t.http.get('/api/v1/openapi.json')).body as OpenApiDocument;
  validator = new ResponseValidator(document);
  operations = operationsOf(document);
});

afterAll(async () => {
  await t.close();
});

function operation(method: string, path: string): Operation {
  const found = operations.find((op) => op.method === method && (op.path === path || op.path === `/api/v1${path}`));
  if (!found) throw new Error(`${method} ${path} is not in the served document`);
  return found;
}

/** Every 2xx answered here must match the schema the served document gives for it. */
function conforms(op: Operation, res: Response): Response {
  bodies.push(res.text ?? '');
  if (res.status < 300) {
    const { documented, schema } = documentedResponse(op, res.status);
    // every success of these operations has a body, so its documented schema must exist and hold
    expect({ status: res.status, documented, schema: schema !== null }).toEqual({ status: res.status, documented: true, schema: true });
    expect(validator.check(schema!, res.body)).toBeNull();
  }
  return res;
}

const api = {
  createTool: async (org: TestOrg, body: unknown, key?: string) => {
    const req = t.http.post(TOOLS).set('Authorization', org.auth);
    if (key) req.set('Idempotency-Key', key);
    return conforms(operation('POST', '/custom_tools'), await req.send(body as object));
  },
  updateTool: async (org: TestOrg, id: string, body: unknown, key?: string) => {
    const req = t.http.patch(`${TOOLS}/${id}`).set('Authorization', org.auth);
    if (key) req.set('Idempotency-Key', key);
    return conforms(operation('PATCH', '/custom_tools/{id}'), await req.send(body as object));
  },
  getTool: async (org: TestOrg, id: string) => conforms(operation('GET', '/custom_tools/{id}'), await t.http.get(`${TOOLS}/${id}`).set('Authorization', org.auth)),
  createSource: async (org: TestOrg, body: unknown) =>
    conforms(operation('POST', '/sources'), await t.http.post(SOURCES).set('Authorization', org.auth).send(body as object)),
};

/** CustomToolCreate with only its required fields. */
const REQUIRED = { label: 'Orders Lookup', description: 'Looks an order up.', method: 'GET', url: 'https://api.example.com/orders' };

async function created(org: TestOrg, body: Record<string, unknown>) {
  const res = await api.createTool(org, body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body.data;
}

async function storedTool(id: string) {
  const [row] = await t.connection.db.select().from(customTools).where(eq(customTools.id, id));
  return row;
}

function secretsOf(id: string, ciphertext: string | null): unknown {
  return ciphertext === null ? null : decryptJson(t.config.encryptionKey, ciphertext, id);
}

// ------------------------------------------------------------------ the tables

describe('CustomToolCreate: each optional field omitted, null where nullable, every enum value', () => {
  let org: TestOrg;
  beforeAll(async () => {
    org = await createOrg(t.app);
  });

  it('only the required fields: every default documented in the response', async () => {
    const tool = await created(org, REQUIRED);
    expect(tool).toMatchObject({
      type: 'read',
      headers: {},
      body_template: null,
      parameters: [],
      response_mapping: null,
      auth: { type: 'none', header_name: null },
      group: null,
      is_active: true,
    });
  });

  it.each(['read', 'write'])('type %s', async (type) => {
    expect((await created(org, { ...REQUIRED, type })).type).toBe(type);
  });

  it.each(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])('method %s', async (method) => {
    expect((await created(org, { ...REQUIRED, method })).method).toBe(method);
  });

  it.each(['body_template', 'response_mapping'])('%s: null', async (field) => {
    const tool = await created(org, { ...REQUIRED, [field]: null });
    expect(tool[field]).toBeNull();
  });

  it('headers, body_template, parameters, response_mapping, auth, group each given alone', async () => {
    const cases: Array<[string, unknown, unknown]> = [
      ['headers', { Accept: 'application/json' }, { Accept: 'application/json' }],
      ['body_template', '{"q": "{{q}}"}', '{"q": "{{q}}"}'],
      ['parameters', [{ name: 'q' }], [{ name: 'q', type: 'string', required: false, in: 'query' }]],
      ['response_mapping', 'data.items', 'data.items'],
      ['auth', { type: 'bearer', credentials: { token: KEPT.token } }, { type: 'bearer', header_name: null }],
      ['group', { name: 'Orders' }, { name: 'Orders', icon: null, color: null }],
      ['group', { name: 'Orders', icon: 'box', color: '#ff0000' }, { name: 'Orders', icon: 'box', color: '#ff0000' }],
    ];
    for (const [field, value, returned] of cases) {
      const tool = await created(org, { ...REQUIRED, [field]: value });
      expect(tool[field]).toEqual(returned);
    }
  });
});

describe('CustomToolParam: each optional field omitted, every enum value', () => {
  let org: TestOrg;
  beforeAll(async () => {
    org = await createOrg(t.app);
  });

  it('only name: type string, required false, in query for GET and body otherwise, no description or headerName', async () => {
    const get = await created(org, { ...REQUIRED, parameters: [{ name: 'q' }] });
    expect(get.parameters).toEqual([{ name: 'q', type: 'string', required: false, in: 'query' }]);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const tool = await created(org, { ...REQUIRED, method, parameters: [{ name: 'q' }] });
      expect(tool.parameters).toEqual([{ name: 'q', type: 'string', required: false, in: 'body' }]);
    }
  });

  it.each(['string', 'number', 'boolean', 'integer'])('type %s', async (type) => {
    expect((await created(org, { ...REQUIRED, parameters: [{ name: 'q', type }] })).parameters[0].type).toBe(type);
  });

  it.each(['query', 'header', 'body'])('in %s (headerName omitted)', async (location) => {
    const [param] = (await created(org, { ...REQUIRED, parameters: [{ name: 'q', in: location }] })).parameters;
    expect(param.in).toBe(location);
    // headerName defaults to the parameter's name, and only header parameters have one
    if (location === 'header') expect(param.headerName).toBe('q');
    else expect(param).not.toHaveProperty('headerName');
  });

  it('description, required and headerName given', async () => {
    const [param] = (
      await created(org, { ...REQUIRED, parameters: [{ name: 'tenant', description: 'Tenant id', required: true, in: 'header', headerName: 'X-Tenant' }] })
    ).parameters;
    expect(param).toEqual({ name: 'tenant', type: 'string', description: 'Tenant id', required: true, in: 'header', headerName: 'X-Tenant' });
  });
});

describe('CustomToolAuthInput: each optional field omitted, every enum value', () => {
  let org: TestOrg;
  beforeAll(async () => {
    org = await createOrg(t.app);
  });

  it.each(['none', 'bearer', 'api_key', 'basic'])('type %s without credentials', async (type) => {
    const tool = await created(org, { ...REQUIRED, auth: { type } });
    expect(tool.auth).toEqual({ type, header_name: type === 'api_key' ? 'X-API-Key' : null });
    expect((await storedTool(tool.id)).credentialsCiphertext).toBeNull();
  });

  it.each([
    ['bearer', {}],
    ['api_key', {}],
    ['api_key', { header_name: 'X-Key' }],
    ['basic', { username: 'only-user' }],
    ['basic', { password: KEPT.password }],
  ] as const)('type %s with credentials %j: the fields given are stored, the others absent', async (type, credentials) => {
    const tool = await created(org, { ...REQUIRED, auth: { type, credentials } });
    const row = await storedTool(tool.id);
    const secret = Object.fromEntries(Object.entries(credentials).filter(([key]) => key !== 'header_name'));
    expect(secretsOf(tool.id, row.credentialsCiphertext)).toEqual(Object.keys(secret).length ? secret : null);
    expect(tool.auth.header_name).toBe(type === 'api_key' ? ('header_name' in credentials ? credentials.header_name : 'X-API-Key') : null);
  });
});

describe('CustomToolUpdate: any subset, none required; omitted fields unchanged', () => {
  it('{} and each field alone: 200, only that field changes', async () => {
    const org = await createOrg(t.app);
    const tool = await created(org, {
      ...REQUIRED,
      method: 'POST',
      headers: { Accept: 'application/json' },
      body_template: '{"q": "{{q}}"}',
      parameters: [{ name: 'q' }],
      response_mapping: 'data',
      auth: { type: 'bearer', credentials: { token: KEPT.token } },
      group: { name: 'G' },
    });
    const strip = (value: Record<string, unknown>) => {
      const { updated_at: _u, ...rest } = value;
      return rest;
    };
    const empty = await api.updateTool(org, tool.id, {});
    expect(empty.status).toBe(200);
    expect(strip(empty.body.data)).toEqual(strip(tool));

    const singles: Array<[string, unknown, unknown]> = [
      ['label', 'Renamed', 'Renamed'],
      ['description', 'New text.', 'New text.'],
      ['method', 'PUT', 'PUT'],
      ['url', 'https://api.example.com/v2/orders', 'https://api.example.com/v2/orders'],
      ['type', 'write', 'write'],
      ['type', 'read', 'read'],
      ['headers', { 'X-Client': 'agent' }, { 'X-Client': 'agent' }],
      ['body_template', null, null],
      ['parameters', [], []],
      ['response_mapping', null, null],
      ['auth', { type: 'bearer' }, { type: 'bearer', header_name: null }],
      ['group', null, null],
      ['is_active', false, false],
      ['is_active', true, true],
    ];
    let current = empty.body.data;
    for (const [field, value, returned] of singles) {
      const res = await api.updateTool(org, tool.id, { [field]: value });
      expect({ field, status: res.status }).toEqual({ field, status: 200 });
      expect(strip(res.body.data)).toEqual(strip({ ...current, [field]: returned }));
      current = res.body.data;
    }
    // the same-type auth without credentials kept the secret through all of it
    expect(secretsOf(tool.id, (await storedTool(tool.id)).credentialsCiphertext)).toEqual({ token: KEPT.token });
  });

  it.each(['none', 'bearer', 'api_key', 'basic'])('auth.type %s without credentials', async (type) => {
    const org = await createOrg(t.app);
    const tool = await created(org, { ...REQUIRED, auth: { type: 'basic', credentials: { username: 'u', password: KEPT.password } } });
    const res = await api.updateTool(org, tool.id, { auth: { type } });
    expect(res.status).toBe(200);
    expect(res.body.data.auth).toEqual({ type, header_name: type === 'api_key' ? 'X-API-Key' : null });
    // basic → basic keeps the secrets; any other type drops them
    const stored = secretsOf(tool.id, (await storedTool(tool.id)).credentialsCiphertext);
    expect(stored).toEqual(type === 'basic' ? { username: 'u', password: KEPT.password } : null);
  });
});

describe('SourceCreate: each optional field omitted, every enum value', () => {
  let org: TestOrg;
  beforeAll(async () => {
    org = await createOrg(t.app);
  });

  async function storedConfig(id: string) {
    const [row] = await t.connection.db.select().from(sources).where(eq(sources.id, id));
    return row.config;
  }

  it.each(['website', 'webpage'])('type %s with only config.url: indexed defaults to false', async (type) => {
    const res = await api.createSource(org, { type, name: 'Docs', config: { url: 'https://docs.example.com/' } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ type, name: 'Docs', sync_status: 'fetching', is_active: true });
    expect(await storedConfig(res.body.data.id)).toEqual({ url: 'https://docs.example.com/', indexed: false });
  });

  it.each([true, false])('config.indexed %s, with additional keys', async (indexed) => {
    const res = await api.createSource(org, { type: 'website', name: 'Docs', config: { url: 'https://docs.example.com/', indexed, max_pages: 10 } });
    expect(res.status).toBe(201);
    expect(await storedConfig(res.body.data.id)).toEqual({ url: 'https://docs.example.com/', indexed, max_pages: 10 });
  });
});

// ------------------------------------------------------------------ what generated clients rely on (tools and sources)

describe('item 1 and 7: auth without credentials; credentials replaced whole; unused fields dropped', () => {
  it('POST {"type":"bearer"} and {"type":"basic"} without credentials: 201', async () => {
    const org = await createOrg(t.app);
    for (const type of ['bearer', 'basic']) {
      const tool = await created(org, { ...REQUIRED, auth: { type } });
      expect(tool.auth).toEqual({ type, header_name: null });
    }
  });

  it('PATCH to a new type without credentials: 200, the old secrets dropped', async () => {
    const org = await createOrg(t.app);
    const tool = await created(org, { ...REQUIRED, auth: { type: 'api_key', credentials: { apiKey: KEPT.apiKey, header_name: 'X-Key' } } });
    const res = await api.updateTool(org, tool.id, { auth: { type: 'bearer' } });
    expect(res.status).toBe(200);
    expect(res.body.data.auth).toEqual({ type: 'bearer', header_name: null });
    expect((await storedTool(tool.id)).credentialsCiphertext).toBeNull();
  });

  it('a fresh credentials object replaces the stored one: the fields it lacks are absent afterwards', async () => {
    const org = await createOrg(t.app);
    const tool = await created(org, { ...REQUIRED, auth: { type: 'basic', credentials: { username: 'first', password: KEPT.password } } });
    const res = await api.updateTool(org, tool.id, { auth: { type: 'basic', credentials: { username: 'second' } } });
    expect(res.status).toBe(200);
    expect(secretsOf(tool.id, (await storedTool(tool.id)).credentialsCiphertext)).toEqual({ username: 'second' });
    const emptied = await api.updateTool(org, tool.id, { auth: { type: 'basic', credentials: {} } });
    expect(emptied.status).toBe(200);
    expect((await storedTool(tool.id)).credentialsCiphertext).toBeNull();
  });

  it('fields the type does not use are accepted and dropped, on POST and PATCH, for every type', async () => {
    const org = await createOrg(t.app);
    const all = { token: DROPPED.token, apiKey: DROPPED.apiKey, username: DROPPED.username, password: DROPPED.password, header_name: 'X-Dropped' };
    const expected: Record<string, unknown> = {
      none: null,
      bearer: { token: DROPPED.token },
      api_key: { apiKey: DROPPED.apiKey },
      basic: { username: DROPPED.username, password: DROPPED.password },
    };
    for (const type of ['none', 'bearer', 'api_key', 'basic']) {
      const tool = await created(org, { ...REQUIRED, auth: { type, credentials: all } });
      expect(tool.auth).toEqual({ type, header_name: type === 'api_key' ? 'X-Dropped' : null });
      expect(secretsOf(tool.id, (await storedTool(tool.id)).credentialsCiphertext)).toEqual(expected[type]);
      const patched = await api.updateTool(org, tool.id, { auth: { type, credentials: all } });
      expect(patched.status).toBe(200);
      expect(secretsOf(tool.id, (await storedTool(tool.id)).credentialsCiphertext)).toEqual(expected[type]);
    }
    const issueExample = await created(org, { ...REQUIRED, auth: { type: 'api_key', credentials: { apiKey: KEPT.apiKey, token: DROPPED.token } } });
    expect(secretsOf(issueExample.id, (await storedTool(issueExample.id)).credentialsCiphertext)).toEqual({ apiKey: KEPT.apiKey });
  });
});

describe('items 2 and 3: undeclared placeholders kept as written; {{ q }} the same in url and body_template', () => {
  it('create with no parameters', async () => {
    const org = await createOrg(t.app);
    const tool = await created(org, { ...REQUIRED, url: 'https://api.example.com/orders/{{id}}' });
    expect(tool.url).toBe('https://api.example.com/orders/{{id}}');
    expect(tool.parameters).toEqual([]);
  });

  it('PATCH of url alone, and PATCH {"parameters":[]} under a url and body that use them', async () => {
    const org = await createOrg(t.app);
    const tool = await created(org, {
      ...REQUIRED,
      method: 'POST',
      url: 'https://api.example.com/orders/{{id}}',
      parameters: [{ name: 'id' }, { name: 'note' }],
      body_template: '{"note": "{{note}}", "n": {{n}}}',
    });
    const url = await api.updateTool(org, tool.id, { url: 'https://api.example.com/orders/{{order_ref}}/{{line}}' });
    expect(url.status).toBe(200);
    expect(url.body.data.url).toBe('https://api.example.com/orders/{{order_ref}}/{{line}}');
    const emptied = await api.updateTool(org, tool.id, { parameters: [] });
    expect(emptied.status).toBe(200);
    expect(emptied.body.data).toMatchObject({ parameters: [], body_template: '{"note": "{{note}}", "n": {{n}}}' });
  });

  it('{{ q }} with blanks: accepted in url and in body_template, kept as written', async () => {
    const org = await createOrg(t.app);
    const tool = await created(org, {
      ...REQUIRED,
      method: 'POST',
      url: 'https://api.example.com/search?q={{ q }}&page={{\tpage }}',
      parameters: [{ name: 'q' }],
      body_template: '{"q": "{{ q }}", "page": {{ page }}}',
    });
    expect(tool.url).toBe('https://api.example.com/search?q={{ q }}&page={{\tpage }}');
    expect(tool.body_template).toBe('{"q": "{{ q }}", "page": {{ page }}}');
  });
});

describe('item 4: a placeholder for host labels left of the registrable domain', () => {
  it.each([
    'https://{{subdomain}}.zendesk.com/api/v2/tickets',
    'https://{{ subdomain }}.zendesk.com/api/v2/tickets',
    'https://{{region}}.{{tenant}}.api.example.com/v1',
    'https://{{shop}}.myshopify.com/admin/api/2024-01/orders.json',
    'https://{{tenant}}.example.co.uk/',
  ])('%s → 201', async (url) => {
    const org = await createOrg(t.app);
    expect((await created(org, { ...REQUIRED, url })).url).toBe(url);
  });

  it.each([
    ['https://{{host}}/api', 'registrable domain'],
    ['https://{{company}}.com/api', 'registrable domain'],
    ['https://{{company}}.co.uk/api', 'registrable domain'],
    ['https://api.example.com:{{port}}/', 'port'],
    ['{{scheme}}://api.example.com/', 'scheme'],
    ['https://{{octet}}.0.0.1/', 'IP address'],
    ['https://[fe80::{{x}}]/', 'IP address'],
    ['https://{{x}}.localhost/', 'internal by convention'],
    ['https://{{x}}.svc.cluster.local/', 'internal by convention'],
  ])('%s → 422 naming url', async (url, problem) => {
    const org = await createOrg(t.app);
    const res = await api.createTool(org, { ...REQUIRED, url });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields)).toEqual(['url']);
    expect(res.body.error.details.fields.url[0]).toContain(problem);
  });
});

describe('items 5 and 6: parameter names of [A-Za-z0-9_.-]{1,64}; headerName defaults to the name', () => {
  it('order-id, user.id, 9lives and a 64-character name are accepted; 65 characters, blanks and other characters are not', async () => {
    const org = await createOrg(t.app);
    const names = ['order-id', 'user.id', '9lives', '-', 'a'.repeat(BOUNDS.toolParameterName)];
    const tool = await created(org, { ...REQUIRED, url: 'https://api.example.com/{{order-id}}/{{user.id}}', parameters: names.map((name) => ({ name })) });
    expect(tool.parameters.map((param: { name: string }) => param.name)).toEqual(names);
    for (const name of ['a'.repeat(BOUNDS.toolParameterName + 1), 'has space', 'naïve', 'a/b', '']) {
      const res = await api.createTool(org, { ...REQUIRED, parameters: [{ name }] });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual(['parameters[0].name']);
    }
  });

  it('in=header without headerName: 201, headerName returned as the parameter name, on POST, PATCH and GET', async () => {
    const org = await createOrg(t.app);
    const tool = await created(org, { ...REQUIRED, parameters: [{ name: 'X-Request-Source', in: 'header' }] });
    expect(tool.parameters[0]).toEqual({ name: 'X-Request-Source', type: 'string', required: false, in: 'header', headerName: 'X-Request-Source' });
    const patched = await api.updateTool(org, tool.id, { parameters: [{ name: 'user.id', in: 'header' }] });
    expect(patched.body.data.parameters[0]).toMatchObject({ in: 'header', headerName: 'user.id' });
    expect((await api.getTool(org, tool.id)).body.data.parameters[0].headerName).toBe('user.id');
  });
});

describe('item 8 (sources): a config with a realistic exclude list', () => {
  it('an exclude list of 500 paths passes; a config over the documented bound is 422 naming config', async () => {
    const org = await createOrg(t.app);
    const exclude = Array.from({ length: 500 }, (_, i) => `/docs/archive/${2000 + (i % 25)}/release-notes/section-${i}/deprecated-page-${i}.html`);
    const config = { url: 'https://docs.example.com/', indexed: true, crawl: { exclude, include: ['/docs/**'], max_depth: 5 } };
    expect(Buffer.byteLength(JSON.stringify(config))).toBeGreaterThan(BOUNDS.jsonBytes * 4);
    const res = await api.createSource(org, { type: 'website', name: 'Docs', config });
    expect(res.status).toBe(201);
    const [row] = await t.connection.db.select().from(sources).where(eq(sources.id, res.body.data.id));
    expect(row.config).toEqual(config);

    const over = await api.createSource(org, { type: 'website', name: 'Docs', config: { url: 'https://docs.example.com/', crawl: { exclude: Array(8).fill(exclude).flat() } } });
    expect(over.status).toBe(422);
    expect(Object.keys(over.body.error.details.fields)).toEqual(['config']);
  });
});

describe('Authorization and Cookie stay refused in plain headers, and the error says why', () => {
  it.each(['Authorization', 'Cookie', 'proxy-authorization'])('%s', async (name) => {
    const org = await createOrg(t.app);
    const res = await api.createTool(org, { ...REQUIRED, headers: { [name]: 'x' } });
    expect(res.status).toBe(422);
    const [problem] = res.body.error.details.fields[`headers.${name}`];
    expect(problem).toMatch(/stored unencrypted and returned/);
    expect(problem).toMatch(/auth/);
  });
});

// ------------------------------------------------------------------ one row builder for the API and the fixture loader

describe('the fixture loader builds the stored row exactly as POST /custom_tools does', () => {
  const definitions: Array<Record<string, unknown>> = [
    { ...REQUIRED, label: 'Row 1', url: 'https://{{subdomain}}.zendesk.com/api/v2/tickets/{{ id }}' },
    {
      ...REQUIRED,
      label: 'Row 2',
      method: 'POST',
      parameters: [{ name: 'order-id', in: 'header' }, { name: 'n', type: 'integer' }],
      body_template: '{"n": {{n}}, "x": "{{undeclared}}"}',
    },
    { ...REQUIRED, label: 'Row 3', auth: { type: 'api_key' }, group: { name: 'G' }, headers: { Accept: 'application/json' }, response_mapping: 'data' },
    { ...REQUIRED, label: 'Row 4', type: 'write', method: 'DELETE', parameters: [{ name: 'user.id', description: 'who', required: true }] },
  ];
  const columns = (row: Record<string, unknown>) => {
    const { id: _id, orgId: _org, name: _name, createdAt: _c, updatedAt: _u, credentialsCiphertext: _s, ...rest } = row;
    return rest;
  };

  it('the same definitions give the same columns', async () => {
    const org = await createOrg(t.app);
    const orgId = newId('org');
    await t.app.get(FixtureLoader).load({ orgs: [{ id: orgId, name: 'Row Builder', slug: `row-builder-${orgId.slice(-8)}`, custom_tools: definitions }] });
    const loaded = await t.connection.db.select().from(customTools).where(eq(customTools.orgId, orgId));
    expect(loaded).toHaveLength(definitions.length);
    for (const definition of definitions) {
      const tool = await created(org, definition);
      expect(columns(loaded.find((row) => row.label === definition.label)!)).toEqual(columns(await storedTool(tool.id)));
    }
  });

  it('what the API refuses, the loader refuses with the same problem at the item path', async () => {
    const org = await createOrg(t.app);
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ ...REQUIRED, url: 'https://{{host}}/' }, 'url'],
      [{ ...REQUIRED, url: 'http://[::ffff:0:7f00:1]/' }, 'url'],
      [{ ...REQUIRED, headers: { Cookie: 'c' } }, 'headers.Cookie'],
      [{ ...REQUIRED, parameters: [{ name: 'a b' }] }, 'parameters[0].name'],
      [{ ...REQUIRED, label: 'x'.repeat(BOUNDS.name + 1) }, 'label'],
      [{ ...REQUIRED, parameters: [{ name: 'q', in: 'header', headerName: 'bad header' }] }, 'parameters[0].headerName'],
    ];
    for (const [definition, field] of refused) {
      const res = await api.createTool(org, definition);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual([field]);
      const orgId = newId('org');
      const fixture = { orgs: [{ id: orgId, name: 'Refused', slug: `refused-${orgId.slice(-8)}`, custom_tools: [definition] }] };
      await expect(t.app.get(FixtureLoader).load(fixture)).rejects.toMatchObject({ path: `orgs[0].custom_tools[0].${field}` });
    }
  });

  it('fixture credentials follow the API rules: absent allowed, unused fields dropped', async () => {
    const orgId = newId('org');
    const toolId = newId('customTool');
    await t.app.get(FixtureLoader).load({
      orgs: [
        {
          id: orgId,
          name: 'Fixture Credentials',
          slug: `fixture-creds-${orgId.slice(-8)}`,
          custom_tools: [
            { ...REQUIRED, id: toolId, auth: { type: 'api_key', header_name: 'X-Fixture' }, credentials: { apiKey: KEPT.apiKey, token: DROPPED.token } },
            { ...REQUIRED, label: 'No Secret', auth: { type: 'bearer', header_name: null } },
          ],
        },
      ],
    });
    const row = await storedTool(toolId);
    expect(row).toMatchObject({ authType: 'api_key', authHeaderName: 'X-Fixture' });
    expect(secretsOf(toolId, row.credentialsCiphertext)).toEqual({ apiKey: KEPT.apiKey });
    const [other] = await t.connection.db.select().from(customTools).where(and(eq(customTools.orgId, orgId), eq(customTools.label, 'No Secret')));
    expect(other).toMatchObject({ authType: 'bearer', credentialsCiphertext: null });
  });
});

// ------------------------------------------------------------------ dropped secrets go nowhere

describe('secrets of dropped credential fields appear in no response, log line or idempotency record', () => {
  it('POST and PATCH with an Idempotency-Key: the stored records and the replays hold no secret', async () => {
    const org = await createOrg(t.app);
    const body = { ...REQUIRED, auth: { type: 'bearer', credentials: { token: KEPT.token, apiKey: DROPPED.apiKey, password: DROPPED.password } } };
    const first = await api.createTool(org, body, 'contract-create-1');
    expect(first.status).toBe(201);
    const replay = await api.createTool(org, body, 'contract-create-1');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const patch = { auth: { type: 'basic', credentials: { username: KEPT.username, password: KEPT.password, token: DROPPED.token } } };
    expect((await api.updateTool(org, first.body.data.id, patch, 'contract-patch-1')).status).toBe(200);
    expect((await api.updateTool(org, first.body.data.id, patch, 'contract-patch-1')).headers['idempotent-replayed']).toBe('true');

    const records = await t.connection.db.select().from(idempotencyRecords).where(eq(idempotencyRecords.orgId, org.orgId));
    expect(records).toHaveLength(2);
    const stored = JSON.stringify(records);
    for (const secret of [...Object.values(DROPPED), ...Object.values(KEPT)]) expect(stored).not.toContain(secret);
    // the stored row holds only the type's fields
    expect(secretsOf(first.body.data.id, (await storedTool(first.body.data.id)).credentialsCiphertext)).toEqual({
      username: KEPT.username,
      password: KEPT.password,
    });
  });

  it('no response body and no log line of this file contains a secret it sent', () => {
    expect(bodies.length).toBeGreaterThan(100);
    const responses = bodies.join('\n');
    const logs = t.logs.join('\n');
    for (const secret of [...Object.values(DROPPED), ...Object.values(KEPT)]) {
      expect(responses).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});
