import { and, count, eq, sql } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import request, { type Response } from 'supertest';
import { agents, customTools, idempotencyRecords, sources } from '../src/database/schema';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
import { IdempotencyService } from '../src/idempotency/idempotency.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Idempotency-Key on the real write endpoints (the idempotency.e2e-spec proves the
 * mechanism on a test-only probe): POST/PATCH /agents, POST/PATCH
 * /custom_tools, POST /sources.
 */

const API = '/api/v1';
const SECRET = {
  created: 'tok-SECRET-idem-created-5b1d9e3a7c',
  rotated: 'tok-SECRET-idem-rotated-c84f2a06e1',
  rejected: 'tok-SECRET-idem-rejected-93e7b1d5f0',
};

let t: TestApp;
let org: TestOrg;
/** every response to an authenticated request of this file, checked for the rate-limit headers at the end */
const authenticated: Array<{ what: string; res: Response }> = [];

/**
 * supertest on a server that is not listening opens and closes it around
 * every request, which breaks requests fired concurrently (they share the
 * server): listen once, on a free port, for the app's lifetime.
 */
async function listening(app: TestApp): Promise<TestApp> {
  const server = app.app.getHttpServer() as Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { ...app, http: request(server) };
}

beforeAll(async () => {
  t = await listening(await createTestApp());
  org = await createOrg(t.app);
});
afterAll(() => t.close());

const newKey = () => `key-${randomUUID()}`;
const uniq = () => randomUUID().replace(/-/g, '').slice(0, 10);
const newHandle = () => `h${uniq()}`;

interface SendOptions {
  key?: string | null;
  auth?: string;
  requestId?: string;
  http?: TestApp['http'];
}

/** Sends `body` as exactly these bytes (the fingerprint is over the raw body). */
async function send(method: 'post' | 'patch' | 'get' | 'delete', path: string, body: unknown, options: SendOptions = {}): Promise<Response> {
  const http = options.http ?? t.http;
  const req = http[method](path).set('Authorization', options.auth ?? org.auth);
  if (options.key) req.set('Idempotency-Key', options.key);
  if (options.requestId) req.set('X-Request-ID', options.requestId);
  const res = body === undefined ? await req : await req.set('Content-Type', 'application/json').send(typeof body === 'string' ? body : JSON.stringify(body));
  if (!options.http) authenticated.push({ what: `${method.toUpperCase()} ${path} → ${res.status}`, res });
  return res;
}

async function recordsOf(orgId: string, key: string) {
  return t.connection.db
    .select()
    .from(idempotencyRecords)
    .where(and(eq(idempotencyRecords.orgId, orgId), eq(idempotencyRecords.key, key)));
}

async function recordsWithKey(key: string) {
  return t.connection.db.select().from(idempotencyRecords).where(eq(idempotencyRecords.key, key));
}

/** Rows of any organization-scoped table (every table with `org_id`) that belong to one organization. */
async function countRows(table: PgTable & { orgId: AnyPgColumn }, orgId: string): Promise<number> {
  const [row] = await t.connection.db.select({ n: count() }).from(table).where(eq(table.orgId, orgId));
  return row.n;
}

function expectStatus(res: Response, status: number): Response {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: expect.anything() });
  return res;
}

function withoutRequestId(body: { meta?: Record<string, unknown>; error?: Record<string, unknown> }) {
  const copy = structuredClone(body);
  if (copy.meta) delete copy.meta.request_id;
  if (copy.error) delete copy.error.request_id;
  return copy;
}

function expectCompleteEnvelope(res: Response): void {
  expect(res.headers['x-request-id']).toEqual(expect.any(String));
  if (res.status >= 200 && res.status < 300) {
    expect(Object.keys(res.body).sort()).toEqual(['data', 'meta']);
    expect(res.body.data).toEqual(expect.objectContaining({ id: expect.any(String) }));
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  } else {
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(res.body.error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String), request_id: res.headers['x-request-id'] }));
  }
}

const agentBody = (overrides: Record<string, unknown> = {}) => ({ handle: newHandle(), name: 'Support bot', instructions: 'Help customers.', ...overrides });
const toolBody = (overrides: Record<string, unknown> = {}) => ({
  label: `Get Ticket ${uniq()}`,
  description: 'Fetches one ticket by id.',
  method: 'GET',
  url: 'https://acme.example.com/api/tickets/{{ticket_id}}.json',
  parameters: [{ name: 'ticket_id', type: 'integer', required: true, in: 'query' }],
  auth: { type: 'bearer', credentials: { token: SECRET.created } },
  ...overrides,
});
const sourceBody = (overrides: Record<string, unknown> = {}) => ({
  type: 'website',
  name: `Help center ${uniq()}`,
  config: { url: `https://help-${uniq()}.example.com/` },
  ...overrides,
});

async function createAgent(o: TestOrg = org): Promise<{ id: string; handle: string }> {
  const res = await send('post', `${API}/agents`, agentBody(), { auth: o.auth });
  expect(res.status).toBe(201);
  return res.body.data;
}

async function createTool(o: TestOrg = org): Promise<{ id: string }> {
  const res = await send('post', `${API}/custom_tools`, toolBody(), { auth: o.auth });
  expect(res.status).toBe(201);
  return res.body.data;
}

/**
 * One real write endpoint: how to reach it, a body, another body, and how to
 * tell from the database whether the operation ran.
 */
interface Endpoint {
  name: string;
  method: 'post' | 'patch';
  status: number;
  /** the created resource has a PATCH route */
  patchable?: boolean;
  /** prepares the target in `o` and returns its path */
  prepare(o: TestOrg): Promise<{ path: string; otherPath: string; id?: string }>;
  body(): Record<string, unknown>;
  otherBody(): Record<string, unknown>;
  /** a fingerprint of the database state the operation changes */
  effect(o: TestOrg, target: { id?: string }): Promise<unknown>;
  /** undoes what a PATCH wrote, behind the API's back, so a second execution would show */
  tamper?(target: { id?: string }): Promise<void>;
}

const ENDPOINTS: Endpoint[] = [
  {
    name: 'POST /agents',
    method: 'post',
    status: 201,
    patchable: true,
    prepare: async () => ({ path: `${API}/agents`, otherPath: `${API}/sources` }),
    body: () => agentBody(),
    otherBody: () => agentBody(),
    effect: (o) => countRows(agents, o.orgId),
  },
  {
    name: 'PATCH /agents/{id}',
    method: 'patch',
    status: 200,
    prepare: async (o) => {
      const [agent, other] = [await createAgent(o), await createAgent(o)];
      return { path: `${API}/agents/${agent.id}`, otherPath: `${API}/agents/${other.id}`, id: agent.id };
    },
    body: () => ({ name: 'Renamed by the client', description: 'Set once.' }),
    otherBody: () => ({ name: 'Renamed otherwise' }),
    effect: async (_o, target) => {
      const [row] = await t.connection.db.select({ name: agents.name, description: agents.description }).from(agents).where(eq(agents.id, target.id!));
      return row;
    },
    tamper: async (target) => {
      await t.connection.db.update(agents).set({ name: 'Changed behind the API', description: null }).where(eq(agents.id, target.id!));
    },
  },
  {
    name: 'POST /custom_tools',
    method: 'post',
    status: 201,
    patchable: true,
    prepare: async () => ({ path: `${API}/custom_tools`, otherPath: `${API}/agents` }),
    body: () => toolBody(),
    otherBody: () => toolBody(),
    effect: (o) => countRows(customTools, o.orgId),
  },
  {
    name: 'PATCH /custom_tools/{id}',
    method: 'patch',
    status: 200,
    prepare: async (o) => {
      const [tool, other] = [await createTool(o), await createTool(o)];
      return { path: `${API}/custom_tools/${tool.id}`, otherPath: `${API}/custom_tools/${other.id}`, id: tool.id };
    },
    body: () => ({ description: 'Rotated and described.', auth: { type: 'bearer', credentials: { token: SECRET.rotated } } }),
    otherBody: () => ({ description: 'Something else.' }),
    // AES-GCM uses a fresh IV on every encryption: an unchanged ciphertext proves the rotation did not run again
    effect: async (_o, target) => {
      const [row] = await t.connection.db
        .select({ description: customTools.description, ciphertext: customTools.credentialsCiphertext })
        .from(customTools)
        .where(eq(customTools.id, target.id!));
      return row;
    },
    tamper: async (target) => {
      await t.connection.db.update(customTools).set({ description: 'Changed behind the API' }).where(eq(customTools.id, target.id!));
    },
  },
  {
    name: 'POST /sources',
    method: 'post',
    status: 201,
    prepare: async () => ({ path: `${API}/sources`, otherPath: `${API}/custom_tools` }),
    body: () => sourceBody(),
    otherBody: () => sourceBody(),
    effect: (o) => countRows(sources, o.orgId),
  },
];

test('every authenticated POST and PATCH the API serves has its entry in ENDPOINTS, and every entry is served', async () => {
  const document = (await t.http.get(`${API}/openapi.json`).expect(200)).body as { paths: Record<string, Record<string, { security?: unknown[] }>> };
  const served = Object.entries(document.paths).flatMap(([path, item]) =>
    ['post', 'patch']
      .filter((method) => item[method] && !(Array.isArray(item[method].security) && item[method].security.length === 0))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect(served.length).toBeGreaterThan(0);
  const listed = new Set(ENDPOINTS.map((endpoint) => endpoint.name));
  const missing = served
    .filter((name) => !listed.has(name))
    .map((name) => `${name} takes Idempotency-Key but has no entry in ENDPOINTS (test/idempotency-endpoints.e2e-spec.ts): add one`);
  expect(missing).toEqual([]);
  const stale = [...listed].filter((name) => !served.includes(name)).map((name) => `ENDPOINTS lists ${name}, which the API does not serve`);
  expect(stale).toEqual([]);
});

describe.each(ENDPOINTS)('$name honors Idempotency-Key', (endpoint) => {
  it('same key and same body: the stored response is replayed, except meta.request_id, and the operation does not run again', async () => {
    const target = await endpoint.prepare(org);
    const key = newKey();
    const raw = JSON.stringify(endpoint.body());
    const first = await send(endpoint.method, target.path, raw, { key, requestId: `first-${uniq()}` });
    expect(first.status).toBe(endpoint.status);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    await endpoint.tamper?.(target);
    const effectBefore = await endpoint.effect(org, target);

    const retryId = `retry-${uniq()}`;
    const replay = await send(endpoint.method, target.path, raw, { key, requestId: retryId });
    expect(replay.status).toBe(first.status);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['x-request-id']).toBe(retryId);
    expect(replay.body.meta.request_id).toBe(retryId);
    expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
    // byte for byte, field order included
    expect(replay.text).toBe(first.text.replace(first.body.meta.request_id, retryId));
    expect(await endpoint.effect(org, target)).toEqual(effectBefore);

    const [record] = await recordsOf(org.orgId, key);
    expect(record.status).toBe(endpoint.status);
  });

  it('same key with a different body, path or method: 409 idempotency_key_reused, and nothing runs', async () => {
    const target = await endpoint.prepare(org);
    const key = newKey();
    const body = endpoint.body();
    const first = expectStatus(await send(endpoint.method, target.path, body, { key }), endpoint.status);
    const effectBefore = await endpoint.effect(org, target);
    const otherTarget = { id: target.otherPath.split('/').pop() };
    const otherBefore = endpoint.tamper ? await endpoint.effect(org, otherTarget) : null;

    const attempts: Array<[string, Promise<Response>]> = [
      ['different body', send(endpoint.method, target.path, endpoint.otherBody(), { key })],
      ['same body, bytes reordered', send(endpoint.method, target.path, JSON.stringify(Object.fromEntries(Object.entries(body).reverse())), { key })],
      ['different path', send(endpoint.method, target.otherPath, body, { key })],
    ];
    // no route takes both POST and PATCH on one path: the other method is PATCH of the created resource, or POST to the collection
    if (endpoint.method === 'patch') attempts.push(['different method', send('post', target.path.replace(/\/[^/]+$/, ''), body, { key })]);
    else if (endpoint.patchable) attempts.push(['different method', send('patch', `${target.path}/${first.body.data.id}`, body, { key })]);
    if (target.id) {
      // the same resource through its bare id is another path as received
      attempts.push(['bare id', send(endpoint.method, target.path.replace(/\/[a-z]+_([a-f0-9]{24})$/, '/$1'), body, { key })]);
    }
    for (const [label, attempt] of attempts) {
      const res = await attempt;
      expect({ label, status: res.status, code: res.body.error?.code }).toEqual({ label, status: 409, code: 'idempotency_key_reused' });
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expectCompleteEnvelope(res);
    }
    expect(await endpoint.effect(org, target)).toEqual(effectBefore);
    if (endpoint.tamper) expect(await endpoint.effect(org, otherTarget)).toEqual(otherBefore);
    expect(await recordsOf(org.orgId, key)).toHaveLength(1);
  });

  it('keys are scoped per organization: org B sending org A\'s key string executes fresh', async () => {
    const orgB = await createOrg(t.app);
    const targetA = await endpoint.prepare(org);
    const targetB = await endpoint.prepare(orgB);
    const key = newKey();
    const raw = JSON.stringify(endpoint.body());
    const mine = expectStatus(await send(endpoint.method, targetA.path, raw, { key }), endpoint.status);
    await endpoint.tamper?.(targetB);
    const before = await endpoint.effect(orgB, targetB);
    const theirs = await send(endpoint.method, targetB.path, raw, { key, auth: orgB.auth });
    expect(theirs.status).toBe(endpoint.status);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(await endpoint.effect(orgB, targetB)).not.toEqual(before);
    if (endpoint.method === 'post') expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    expect(await recordsOf(orgB.orgId, key)).toHaveLength(1);
    expect(await recordsOf(org.orgId, key)).toHaveLength(1);
  });

  it('an expired record (expires_at in the past) executes fresh and is replaced', async () => {
    const target = await endpoint.prepare(org);
    const key = newKey();
    const raw = JSON.stringify(endpoint.body());
    const first = expectStatus(await send(endpoint.method, target.path, raw, { key }), endpoint.status);
    await t.connection.db
      .update(idempotencyRecords)
      .set({ createdAt: new Date(Date.now() - 25 * 3_600_000), expiresAt: new Date(Date.now() - 3_600_000) })
      .where(and(eq(idempotencyRecords.orgId, org.orgId), eq(idempotencyRecords.key, key)));
    await endpoint.tamper?.(target);
    const before = await endpoint.effect(org, target);

    const again = await send(endpoint.method, target.path, raw, { key });
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    const [record] = await recordsOf(org.orgId, key);
    expect(record.status).toBe(again.status);
    expect(record.body).toEqual(again.body);
    expect(record.expiresAt.getTime()).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    if (endpoint.name === 'POST /agents') {
      // the same handle again: the fresh run is the domain's 409, not a replay of the 201
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('agent_handle_taken');
      expect(await endpoint.effect(org, target)).toEqual(before);
    } else {
      expect(again.status).toBe(endpoint.status);
      expect(await endpoint.effect(org, target)).not.toEqual(before);
      if (endpoint.method === 'post') expect(again.body.data.id).not.toBe(first.body.data.id);
    }
  });
});

describe('keys belong to the organization, not to the API key', () => {
  it('another API key of the same organization replays the stored response', async () => {
    const o = await createOrg(t.app);
    const second = await o.key(['agents:write']);
    const key = newKey();
    const raw = JSON.stringify(agentBody());
    const first = expectStatus(await send('post', `${API}/agents`, raw, { key, auth: o.auth }), 201);
    const replay = await send('post', `${API}/agents`, raw, { key, auth: second.auth });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(first.body.data.id);
    expect(await countRows(agents, o.orgId)).toBe(1);
  });

  it('a key of the same organization without the write scope gets 403, not the stored response', async () => {
    const o = await createOrg(t.app);
    const readOnly = await o.key(['agents:read']);
    const key = newKey();
    const raw = JSON.stringify(agentBody());
    expectStatus(await send('post', `${API}/agents`, raw, { key, auth: o.auth }), 201);
    const res = await send('post', `${API}/agents`, raw, { key, auth: readOnly.auth });
    expect(res.status).toBe(403);
    expect(res.body.data).toBeUndefined();
    expect(res.headers['idempotent-replayed']).toBeUndefined();
  });
});

describe('POST /agents: 10 concurrent identical requests with one key', () => {
  it('every response is a complete 2xx/4xx envelope; one record, one agent; a later replay is the 201 with that agent', async () => {
    const o = await createOrg(t.app);
    const key = newKey();
    const raw = JSON.stringify(agentBody());
    const responses = await Promise.all(Array.from({ length: 10 }, () => send('post', `${API}/agents`, raw, { key, auth: o.auth })));
    for (const res of responses) {
      expectCompleteEnvelope(res);
      expect([201, 409]).toContain(res.status);
      if (res.status === 409) expect(res.body.error.code).toBe('agent_handle_taken');
    }
    expect(responses.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);

    expect(await countRows(agents, o.orgId)).toBe(1);
    const stored = await recordsOf(o.orgId, key);
    expect(stored).toHaveLength(1);
    expect(stored[0].status).toBe(201);
    const [agent] = await t.connection.db.select().from(agents).where(eq(agents.orgId, o.orgId));
    const replay = await send('post', `${API}/agents`, raw, { key, auth: o.auth });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(agent.id);
    expect(await countRows(agents, o.orgId)).toBe(1);
  });

  it('a retry that looked the key up just before the first attempt committed gets that 201 replayed, never its own 409', async () => {
    const o = await createOrg(t.app);
    const key = newKey();
    const raw = JSON.stringify(agentBody());
    const first = await send('post', `${API}/agents`, raw, { key, auth: o.auth });
    expectStatus(first, 201);
    // the retry's lookup ran before the first attempt's commit: it finds nothing and runs,
    // and the handle it tries is the one the first attempt took
    const service = t.app.get(IdempotencyService);
    const find = jest.spyOn(service, 'findLive').mockResolvedValueOnce(null);
    let retry: Response;
    try {
      retry = await send('post', `${API}/agents`, raw, { key, auth: o.auth });
    } finally {
      find.mockRestore();
    }
    expectCompleteEnvelope(retry);
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.data.id).toBe(first.body.data.id);
    expect(await countRows(agents, o.orgId)).toBe(1);
    const stored = await recordsOf(o.orgId, key);
    expect(stored).toHaveLength(1);
    expect(stored[0].status).toBe(201);
  });

  it('a racer whose write succeeded but whose record lost rolls its write back and answers the winner (one key, one resource)', async () => {
    const o = await createOrg(t.app);
    const key = newKey();
    const raw = JSON.stringify(toolBody());
    const first = await send('post', `${API}/custom_tools`, raw, { key, auth: o.auth });
    expectStatus(first, 201);
    const find = jest.spyOn(t.app.get(IdempotencyService), 'findLive').mockResolvedValueOnce(null);
    let second: Response;
    try {
      second = await send('post', `${API}/custom_tools`, raw, { key, auth: o.auth });
    } finally {
      find.mockRestore();
    }
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.data.id).toBe(first.body.data.id);
    expect(await countRows(customTools, o.orgId)).toBe(1);
  });
});

describe('which outcomes of the real endpoints are stored', () => {
  it('a 422 (bad handle) is stored and replayed', async () => {
    const key = newKey();
    const raw = JSON.stringify(agentBody({ handle: '1-not a handle' }));
    const first = await send('post', `${API}/agents`, raw, { key });
    expect(first.status).toBe(422);
    expect(first.body.error.code).toBe('validation_failed');
    expect(first.body.error.details.fields).toHaveProperty(['handle']);
    const replay = await send('post', `${API}/agents`, raw, { key });
    expect(replay.status).toBe(422);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.error.request_id).toBe(replay.headers['x-request-id']);
    expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
    expect(replay.text).toBe(first.text.replace(first.body.error.request_id, replay.body.error.request_id));
    const [record] = await recordsOf(org.orgId, key);
    expect(record.status).toBe(422);
  });

  it('a 409 agent_handle_taken is stored and replayed, even after the handle is free again', async () => {
    const taken = await createAgent();
    const key = newKey();
    const raw = JSON.stringify(agentBody({ handle: taken.handle.toUpperCase() }));
    const first = await send('post', `${API}/agents`, raw, { key });
    expect(first.status).toBe(409);
    expect(first.body.error.code).toBe('agent_handle_taken');
    expectStatus(await send('delete', `${API}/agents/${taken.id}`, undefined), 200);
    const before = await countRows(agents, org.orgId);
    const replay = await send('post', `${API}/agents`, raw, { key });
    expect(replay.status).toBe(409);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
    expect(await countRows(agents, org.orgId)).toBe(before);
    expect((await recordsOf(org.orgId, key))[0].status).toBe(409);
  });

  it('a 404 of PATCH /agents/{id} is stored and replayed', async () => {
    const key = newKey();
    const path = `${API}/agents/agent_${'0'.repeat(24)}`;
    const first = await send('patch', path, { name: 'x' }, { key });
    const replay = await send('patch', path, { name: 'x' }, { key });
    expect(first.status).toBe(404);
    expect(first.body.error.code).toBe('agent_not_found');
    expect(replay.status).toBe(404);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
  });

  it('a 401 (revoked key) is not stored: the retry with a valid key runs for real', async () => {
    const o = await createOrg(t.app);
    const revoked = await o.key(['agents:write'], { revoked: true });
    const key = newKey();
    const raw = JSON.stringify(agentBody());
    const denied = await send('post', `${API}/agents`, raw, { key, auth: revoked.auth });
    expect(denied.status).toBe(401);
    expect(await recordsWithKey(key)).toHaveLength(0);
    const retry = await send('post', `${API}/agents`, raw, { key, auth: o.auth });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await countRows(agents, o.orgId)).toBe(1);
  });

  const creates = {
    agents: { scope: 'agents:read', body: (): Record<string, unknown> => agentBody(), table: agents },
    custom_tools: { scope: 'custom_tools:read', body: (): Record<string, unknown> => toolBody(), table: customTools },
    sources: { scope: 'sources:read', body: (): Record<string, unknown> => sourceBody(), table: sources },
  } as const;

  it.each(Object.keys(creates) as Array<keyof typeof creates>)('POST /%s: a 403 (missing scope) is not stored: the retry after fixing the scope runs for real', async (resource) => {
    const { scope, body, table } = creates[resource];
    const o = await createOrg(t.app);
    const readOnly = await o.key([scope]);
    const key = newKey();
    const raw = JSON.stringify(body());
    const before = await countRows(table, o.orgId);
    const denied = await send('post', `${API}/${resource}`, raw, { key, auth: readOnly.auth });
    expect(denied.status).toBe(403);
    expect(await recordsOf(o.orgId, key)).toHaveLength(0);
    const retry = await send('post', `${API}/${resource}`, raw, { key, auth: o.auth });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await countRows(table, o.orgId)).toBe(before + 1);
  });

  it('PATCH: a 403 is not stored either', async () => {
    const o = await createOrg(t.app);
    const agent = await createAgent(o);
    const readOnly = await o.key(['agents:read']);
    const key = newKey();
    expectStatus(await send('patch', `${API}/agents/${agent.id}`, { name: 'Scoped' }, { key, auth: readOnly.auth }), 403);
    expect(await recordsOf(o.orgId, key)).toHaveLength(0);
    const retry = await send('patch', `${API}/agents/${agent.id}`, { name: 'Scoped' }, { key, auth: o.auth });
    expect(retry.status).toBe(200);
    expect(retry.body.data.name).toBe('Scoped');
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
  });
});

describe('a U+0000 in any string is the operation\'s 422, stored and replayed (PostgreSQL cannot hold it: it was a 500)', () => {
  type NulCase = [string, 'post' | 'patch', () => Promise<string> | string, () => Record<string, unknown>, string];
  it.each<NulCase>([
    ['POST /agents', 'post', () => `${API}/agents`, () => agentBody({ name: 'Support\u0000bot' }), 'name'],
    ['PATCH /agents/{id}', 'patch', async () => `${API}/agents/${(await createAgent()).id}`, () => ({ instructions: 'Be kind.\u0000' }), 'instructions'],
    ['POST /custom_tools', 'post', () => `${API}/custom_tools`, () => toolBody({ parameters: [{ name: 'ticket\u0000id', type: 'integer', required: true, in: 'query' }] }), 'parameters[0].name'],
    ['PATCH /custom_tools/{id}', 'patch', async () => `${API}/custom_tools/${(await createTool()).id}`, () => ({ auth: { type: 'bearer', credentials: { token: `${SECRET.rejected}\u0000` } } }), 'auth.credentials.token'],
    ['POST /sources', 'post', () => `${API}/sources`, () => sourceBody({ config: { url: 'https://help.example.com/\u0000' } }), 'config.url'],
    ['POST /agents, in a key', 'post', () => `${API}/agents`, () => ({ ...agentBody(), 'x\u0000y': 1 }), 'x\\u0000y'],
  ])('%s → 422 validation_failed naming the field', async (_name, method, path, body, field) => {
    const target = await path();
    const key = newKey();
    const raw = JSON.stringify(body());
    const first = await send(method, target, raw, { key });
    expect(first.status).toBe(422);
    expect(first.body.error.code).toBe('validation_failed');
    expect(first.body.error.details.fields).toEqual({ [field]: ['must not contain the NUL character (U+0000)'] });
    expect(first.text).not.toContain(SECRET.rejected);
    const replay = await send(method, target, raw, { key });
    expect(replay.status).toBe(422);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
    expect((await recordsOf(org.orgId, key))[0].status).toBe(422);
  });
});

describe('a body of another Content-Type is fingerprinted as received too', () => {
  const postText = (key: string, text: string, type = 'text/plain') => {
    const req = t.http.post(`${API}/agents`).set('Authorization', org.auth).set('Idempotency-Key', key).set('Content-Type', type);
    return req.send(text);
  };

  it('same bytes replay the 422; other bytes are 409 idempotency_key_reused (they were both fingerprinted as an empty body)', async () => {
    const key = newKey();
    const text = JSON.stringify(agentBody());
    const first = await postText(key, text);
    expect(first.status).toBe(422);
    expect(first.body.error.details.fields).toEqual({ body: ['must be a JSON object'] });
    const replay = await postText(key, text);
    expect(replay.status).toBe(422);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const other = await postText(key, 'something else entirely');
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    const [record] = await recordsOf(org.orgId, key);
    expect(record.status).toBe(422);
  });

  it('a non-JSON body over 1 MiB is 413, as a JSON one is', async () => {
    const res = await postText(newKey(), 'x'.repeat(1024 * 1024 + 1), 'application/octet-stream');
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });
});

describe('DELETE and GET ignore Idempotency-Key', () => {
  it.each([
    ['agents', () => createAgent(), 'agent_not_found'],
    ['custom_tools', () => createTool(), 'not_found'],
    ['sources', async () => (expectStatus(await send('post', `${API}/sources`, sourceBody()), 201)).body.data, 'not_found'],
  ] as const)('/%s: GET with any key reads, a second DELETE with the same key is 404, nothing is stored', async (resource, create, notFound) => {
    const { id } = await create();
    const key = newKey();
    const read = await send('get', `${API}/${resource}/${id}`, undefined, { key: 'x'.repeat(300) });
    expect(read.status).toBe(200);
    expect(read.headers['idempotent-replayed']).toBeUndefined();
    const first = await send('delete', `${API}/${resource}/${id}`, undefined, { key });
    const second = await send('delete', `${API}/${resource}/${id}`, undefined, { key });
    expect(first.status).toBe(200);
    expect(second.status).toBe(404);
    expect(second.body.error.code).toBe(notFound);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(await recordsWithKey(key)).toHaveLength(0);
    expect(await recordsWithKey('x'.repeat(300))).toHaveLength(0);
  });
});

describe('custom tool credentials never appear in a replay or in the stored record', () => {
  async function storedBodyText(key: string): Promise<string> {
    const rows = await t.connection.db
      .select({ text: sql<string>`${idempotencyRecords.body}::text` })
      .from(idempotencyRecords)
      .where(and(eq(idempotencyRecords.orgId, org.orgId), eq(idempotencyRecords.key, key)));
    expect(rows).toHaveLength(1);
    return rows[0].text;
  }

  it('POST: the 201, its replay and idempotency_records.body hold no credential', async () => {
    const key = newKey();
    const raw = JSON.stringify(toolBody());
    const first = await send('post', `${API}/custom_tools`, raw, { key });
    const replay = await send('post', `${API}/custom_tools`, raw, { key });
    expect(first.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.auth).toEqual({ type: 'bearer', header_name: null });
    for (const text of [first.text, replay.text, await storedBodyText(key)]) expect(text).not.toContain(SECRET.created);
  });

  it('PATCH rotating credentials: the 200, its replay and the stored body hold no credential', async () => {
    const tool = await createTool();
    const key = newKey();
    const raw = JSON.stringify({ auth: { type: 'bearer', credentials: { token: SECRET.rotated } } });
    const first = await send('patch', `${API}/custom_tools/${tool.id}`, raw, { key });
    const replay = await send('patch', `${API}/custom_tools/${tool.id}`, raw, { key });
    expect(first.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    for (const text of [first.text, replay.text, await storedBodyText(key)]) expect(text).not.toContain(SECRET.rotated);
  });

  it('a rejected (422) create with credentials: the stored error holds no credential', async () => {
    const key = newKey();
    const raw = JSON.stringify(toolBody({ auth: { type: 'bearer', credentials: { token: SECRET.rejected, extra: SECRET.rejected } } }));
    const first = await send('post', `${API}/custom_tools`, raw, { key });
    const replay = await send('post', `${API}/custom_tools`, raw, { key });
    expect(first.status).toBe(422);
    expect(replay.status).toBe(422);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    for (const text of [first.text, replay.text, await storedBodyText(key)]) expect(text).not.toContain(SECRET.rejected);
  });

  it('a record that fails to store is logged without the query parameters (the response body being stored)', async () => {
    const repository = t.app.get(IdempotencyRepository);
    const realSave = repository.save.bind(repository);
    // a real database error: drizzle's message then lists every parameter, the body included
    const save = jest.spyOn(repository, 'save').mockImplementationOnce((orgId, record) => realSave(orgId, { ...record, status: null as never }));
    try {
      const marker = `Marker ${uniq()}`;
      const key = newKey();
      const res = await send('post', `${API}/custom_tools`, toolBody({ description: marker }), { key });
      // the write and its record commit together: neither is there, the client retries
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(await recordsOf(org.orgId, key)).toHaveLength(0);
      const [{ n }] = await t.connection.db.select({ n: count() }).from(customTools).where(eq(customTools.description, marker));
      expect(n).toBe(0);
      const line = t.logs.find((l) => l.includes(res.headers['x-request-id']) && l.includes('idempotency record not stored'));
      expect(line).toBeDefined();
      expect(line).toContain('violates not-null constraint'); // the driver's cause is kept
      expect(line).not.toContain(marker);
    } finally {
      save.mockRestore();
    }
  });

  it('no log line of this file carries a credential', () => {
    const logs = t.logs.join('');
    for (const secret of Object.values(SECRET)) expect(logs).not.toContain(secret);
  });
});

describe('OpenAPI: the five write operations document the key, the replay header and the reuse conflict', () => {
  it.each([
    ['/agents', 'post', '201'],
    ['/agents/{id}', 'patch', '200'],
    ['/custom_tools', 'post', '201'],
    ['/custom_tools/{id}', 'patch', '200'],
    ['/sources', 'post', '201'],
  ])('%s %s', async (path, method, success) => {
    const doc = (await t.http.get(`${API}/openapi.json`).expect(200)).body;
    const operation = doc.paths[path][method];
    const keys = operation.parameters.filter((p: { name: string; in: string }) => p.in === 'header' && p.name === 'Idempotency-Key');
    expect(keys).toHaveLength(1);
    expect(operation.responses[success].headers['Idempotent-Replayed']).toBeDefined();
    expect(operation.responses['409'].description).toContain('idempotency_key_reused');
    for (const header of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
      expect(Object.keys(operation.responses[success].headers ?? {})).toContain(header);
    }
  });
});

describe('rate limiting on the write endpoints', () => {
  it('a replay counts against the key\'s budget: X-RateLimit-Remaining drops by one per request, replays included', async () => {
    const o = await createOrg(t.app);
    const key = newKey();
    const raw = JSON.stringify(agentBody());
    const first = expectStatus(await send('post', `${API}/agents`, raw, { key, auth: o.auth }), 201);
    const replay = expectStatus(await send('post', `${API}/agents`, raw, { key, auth: o.auth }), 201);
    const again = expectStatus(await send('post', `${API}/agents`, raw, { key, auth: o.auth }), 201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const remaining = [first, replay, again].map((r) => Number(r.headers['x-ratelimit-remaining']));
    expect(remaining).toEqual([remaining[0], remaining[0] - 1, remaining[0] - 2]);
  });

  it('with a budget of 3 per minute: a first request and two replays use it up; the fourth is 429, not a replay, and not stored', async () => {
    const limited = await listening(await createTestApp({ rateLimitPerMinute: 3, rateLimitPerHour: 100 }));
    try {
      const o = await createOrg(limited.app);
      const key = newKey();
      const raw = JSON.stringify(sourceBody());
      const responses: Response[] = [];
      for (let i = 0; i < 4; i++) responses.push(await send('post', `${API}/sources`, raw, { key, auth: o.auth, http: limited.http }));
      expect(responses.map((r) => r.status)).toEqual([201, 201, 201, 429]);
      expect(responses.map((r) => r.headers['idempotent-replayed'])).toEqual([undefined, 'true', 'true', undefined]);
      expect(responses.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
      const limitedRes = responses[3];
      expect(limitedRes.body.error.code).toBe('rate_limited');
      expect(Number(limitedRes.headers['retry-after'])).toBeGreaterThanOrEqual(1);

      // a fresh idempotency key refused with 429 is not stored: the retry through another key of the org runs for real
      const fresh = newKey();
      const freshBody = JSON.stringify(sourceBody());
      expectStatus(await send('post', `${API}/sources`, freshBody, { key: fresh, auth: o.auth, http: limited.http }), 429);
      const stored = await limited.connection.db.select().from(idempotencyRecords).where(eq(idempotencyRecords.key, fresh));
      expect(stored).toHaveLength(0);
      const other = await o.key(['sources:write']);
      const retry = await send('post', `${API}/sources`, freshBody, { key: fresh, auth: other.auth, http: limited.http });
      expect(retry.status).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
      const [row] = await limited.connection.db.select({ n: count() }).from(sources).where(and(eq(sources.orgId, o.orgId), eq(sources.type, 'website')));
      expect(row.n).toBe(2);
    } finally {
      await limited.close();
    }
  });

  it('every authenticated response of this file (2xx, 4xx, replays, 409 reuse) carried X-RateLimit-Limit, -Remaining and -Reset', () => {
    expect(authenticated.length).toBeGreaterThan(100);
    const statuses = new Set(authenticated.map(({ res }) => res.status));
    for (const status of [200, 201, 401, 403, 404, 409, 422]) expect(statuses).toContain(status);
    expect(authenticated.some(({ res }) => res.headers['idempotent-replayed'] === 'true')).toBe(true);
    const now = Math.floor(Date.now() / 1000);
    const missing = authenticated
      .filter(({ res }) => {
        const [limit, remaining, reset] = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((h) => res.headers[h]);
        return !(/^\d+$/.test(limit ?? '') && /^\d+$/.test(remaining ?? '') && /^\d+$/.test(reset ?? '') && Number(reset) >= now - 120 && Number(reset) <= now + 3700);
      })
      .map(({ what }) => what);
    expect(missing).toEqual([]);
  });
});
