import { and, count, eq, sql } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import request, { type Response } from 'supertest';
import { agents } from '../src/agents/agents.table';
import { customTools } from '../src/custom-tools/custom-tools.table';
import { sources } from '../src/database/sources.table';
import { idempotencyRecords } from '../src/idempotency/idempotency.table';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
import { IdempotencyService } from '../src/idempotency/idempotency.service';
import { newObjectIdHex } from '../libs/ids/ids';
import type { Scope } from '../src/auth/scopes';
import { createOrg, type TestOrg } from './support/factories';
import { orgRows } from './support/org-rows';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Idempotency-Key on the real write endpoints (the idempotency.e2e-spec proves the
 * mechanism on a test-only probe): every write the served document marks as
 * keyed, found there (see `keyedWrites`), plus cases about particular ones.
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
 * The keyed writes this file exercises are read from the served document:
 * every operation that documents the `Idempotency-Key` header (the
 * document states it on every authenticated POST and PATCH), called with
 * its documented request example, in an organization of its own, and judged
 * by the organization's rows (`orgRows`: every table with `org_id`). A new
 * write is covered without an edit here; one that cannot be covered so goes
 * in OPT_OUTS with the reason.
 */
const OPT_OUTS: Record<string, string> = {};

/** Tables the row comparisons leave out: keys' last use is written in batches, and the records are asserted on their own. */
const NOT_AN_EFFECT = ['api_keys', 'idempotency_records'];

type Method = 'post' | 'patch';
interface DocumentOperation {
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { content?: Record<string, { examples?: Record<string, { value?: Record<string, unknown> }> }> };
  responses?: Record<string, { description?: string; headers?: Record<string, unknown> }>;
  security?: unknown[];
  'x-required-scope'?: string;
}
interface ServedDocument {
  paths: Record<string, Record<string, DocumentOperation>>;
}

let servedDocument: ServedDocument;
async function documentServed(): Promise<ServedDocument> {
  servedDocument ??= (await t.http.get(`${API}/openapi.json`).expect(200)).body as ServedDocument;
  return servedDocument;
}

/** One keyed write of the served document. */
interface KeyedWrite {
  /** `POST /agents` */
  name: string;
  method: Method;
  /** the document's path, relative to the API prefix */
  path: string;
  /** the documented 2xx */
  status: number;
  /** the documented request example (the first) */
  body: Record<string, unknown>;
}

function operationOf(document: ServedDocument, method: string, path: string): DocumentOperation | undefined {
  return document.paths[path]?.[method];
}

function isAuthenticated(operation: DocumentOperation): boolean {
  return !(Array.isArray(operation.security) && operation.security.length === 0);
}

function documentsKey(operation: DocumentOperation): boolean {
  return (operation.parameters ?? []).some((p) => p.in === 'header' && p.name === 'Idempotency-Key');
}

function exampleOf(name: string, operation: DocumentOperation): Record<string, unknown> {
  const examples = operation.requestBody?.content?.['application/json']?.examples;
  const body = examples ? Object.values(examples)[0]?.value : undefined;
  if (!body) throw new Error(`${name} documents no request example: give its body DTO an @ApiBody example (a valid body), or add it to OPT_OUTS (test/idempotency-endpoints.e2e-spec.ts) with the reason`);
  return body;
}

/** Every operation documenting Idempotency-Key, opt-outs left out. */
async function keyedWrites(): Promise<KeyedWrite[]> {
  const document = await documentServed();
  const writes: KeyedWrite[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['post', 'patch'] as const) {
      const operation = item[method];
      const name = `${method.toUpperCase()} ${path}`;
      if (!operation || !documentsKey(operation) || name in OPT_OUTS) continue;
      const status = Object.keys(operation.responses ?? {}).find((code) => /^2\d\d$/.test(code));
      if (!status) throw new Error(`${name} documents no 2xx answer`);
      writes.push({ name, method, path, status: Number(status), body: exampleOf(name, operation) });
    }
  }
  return writes;
}

const collectionOf = (path: string) => path.replace(/\/\{[^}]+\}$/, '');

/** Creates one resource of a collection in `o` with the collection's documented POST example; its id. */
async function createWithExample(o: TestOrg, collection: string): Promise<string> {
  const post = operationOf(await documentServed(), 'post', collection);
  if (!post) throw new Error(`${collection} has no POST to create the target of a keyed write on one of its items: add the operation to OPT_OUTS (test/idempotency-endpoints.e2e-spec.ts) with the reason`);
  const res = await send('post', `${API}${collection}`, exampleOf(`POST ${collection}`, post), { auth: o.auth });
  expect({ created: `POST ${collection}`, status: res.status }).toEqual({ created: `POST ${collection}`, status: 201 });
  return res.body.data.id as string;
}

interface Target {
  /** the URL the write is sent to */
  url: string;
  /** another URL the same route serves (a keyed write sent there with the same key is a different request) */
  otherUrl: string;
  /** the id of the resource a PATCH changes */
  id?: string;
  /** for a PATCH: the resource's values, before, of the fields the example sets */
  restore?: Record<string, unknown>;
}

/** Prepares `write` in `o`: for a PATCH, a resource made by its collection's POST example. */
async function prepare(write: KeyedWrite, o: TestOrg): Promise<Target> {
  if (write.method === 'post') {
    const others = (await keyedWrites()).filter((other) => other.method === 'post' && other.path !== write.path);
    const otherUrl = others.length > 0 ? `${API}${others[0].path}` : `${API}${write.path}/${newObjectIdHex()}`;
    return { url: `${API}${write.path}`, otherUrl };
  }
  const collection = collectionOf(write.path);
  const id = await createWithExample(o, collection);
  const before = (await send('get', `${API}${collection}/${id}`, undefined, { auth: o.auth })).body.data as Record<string, unknown>;
  const restore = Object.fromEntries(Object.keys(write.body).filter((field) => field in before).map((field) => [field, before[field]]));
  // a well-formed id of the same kind that names no resource: the key's reuse is refused before the route looks it up
  const otherUrl = `${API}${collection}/${id.replace(/[a-f0-9]{24}$/, newObjectIdHex())}`;
  return { url: `${API}${collection}/${id}`, otherUrl, id, restore };
}

/**
 * Undoes a PATCH through the API, with the values the resource had before,
 * so that running the PATCH again would show in the rows.
 */
async function undo(write: KeyedWrite, target: Target, o: TestOrg): Promise<void> {
  if (write.method !== 'patch') return;
  if (!target.restore || Object.keys(target.restore).length === 0) {
    throw new Error(`${write.name}: no field of its documented example is in the resource's GET answer, so this test cannot undo it: add it to OPT_OUTS with the reason`);
  }
  const changed = await orgRows(t.connection, o.orgId, { except: NOT_AN_EFFECT });
  const res = await send('patch', target.url, target.restore, { auth: o.auth });
  expect({ undo: write.name, status: res.status }).toEqual({ undo: write.name, status: 200 });
  expect(await orgRows(t.connection, o.orgId, { except: NOT_AN_EFFECT })).not.toBe(changed);
}

/** A body other than the example (never run: the key's first body is what counts). */
function otherBodyOf(write: KeyedWrite, target: Target): Record<string, unknown> {
  if (target.restore && Object.keys(target.restore).length > 0) return target.restore;
  const [field] = Object.keys(write.body);
  return { ...write.body, [field]: `${String(write.body[field])} (another body)` };
}

const effectOf = (o: TestOrg) => orgRows(t.connection, o.orgId, { except: NOT_AN_EFFECT });

test('every authenticated POST and PATCH documents Idempotency-Key, and the keyed writes this file exercises cover them all but the opt-outs', async () => {
  const document = await documentServed();
  const problems: string[] = [];
  const writes = Object.entries(document.paths).flatMap(([path, item]) =>
    (['post', 'patch'] as const).filter((method) => item[method] && isAuthenticated(item[method])).map((method) => ({ name: `${method.toUpperCase()} ${path}`, operation: item[method] })),
  );
  expect(writes.length).toBeGreaterThan(0);
  for (const { name, operation } of writes) {
    if (!documentsKey(operation)) problems.push(`${name} does not document Idempotency-Key (src/idempotency/idempotency.openapi.ts documents it on every authenticated POST and PATCH)`);
  }
  const exercised = new Set((await keyedWrites()).map((write) => write.name));
  for (const { name } of writes) if (!exercised.has(name) && !(name in OPT_OUTS)) problems.push(`${name} is not exercised`);
  for (const name of Object.keys(OPT_OUTS)) if (!writes.some((write) => write.name === name)) problems.push(`OPT_OUTS names ${name}, which the API does not serve: remove it`);
  expect(problems).toEqual([]);
  // the derivation found the writes the API is known to have: a broken reading of the document cannot pass as "nothing to test"
  expect([...exercised]).toEqual(expect.arrayContaining(['POST /agents', 'PATCH /agents/{id}', 'POST /custom_tools', 'PATCH /custom_tools/{id}', 'POST /sources']));
});

describe('every keyed write honors Idempotency-Key', () => {
  /** Runs `check` for every keyed write, each in an organization of its own; reports every failing write by name. */
  async function forEachWrite(check: (write: KeyedWrite, o: TestOrg) => Promise<void>): Promise<void> {
    const failures: string[] = [];
    for (const write of await keyedWrites()) {
      try {
        await check(write, await createOrg(t.app));
      } catch (error) {
        // the write was sent with its documented example: a failure is the key's handling, or an example that cannot succeed
        failures.push(`${write.name} (sent its @ApiBody example; if that cannot succeed, fix the example or add the operation to OPT_OUTS with the reason): ${(error as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  }

  it('same key and same body: the stored response is replayed, except meta.request_id, and the operation does not run again', () =>
    forEachWrite(async (write, o) => {
      const target = await prepare(write, o);
      const key = newKey();
      const raw = JSON.stringify(write.body);
      const first = await send(write.method, target.url, raw, { key, auth: o.auth, requestId: `first-${uniq()}` });
      expect(first.status).toBe(write.status);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      await undo(write, target, o);
      const effectBefore = await effectOf(o);

      const retryId = `retry-${uniq()}`;
      const replay = await send(write.method, target.url, raw, { key, auth: o.auth, requestId: retryId });
      expect(replay.status).toBe(first.status);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.headers['x-request-id']).toBe(retryId);
      expect(replay.body.meta.request_id).toBe(retryId);
      expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
      // byte for byte, field order included
      expect(replay.text).toBe(first.text.replace(first.body.meta.request_id, retryId));
      expect(await effectOf(o)).toBe(effectBefore);

      const [record] = await recordsOf(o.orgId, key);
      expect(record.status).toBe(write.status);
    }));

  it('same key with a different body, path or method: 409 idempotency_key_reused, and nothing runs', () =>
    forEachWrite(async (write, o) => {
      const document = await documentServed();
      const target = await prepare(write, o);
      const key = newKey();
      const first = expectStatus(await send(write.method, target.url, write.body, { key, auth: o.auth }), write.status);
      const effectBefore = await effectOf(o);
      const as = (url: string, body: unknown, method: Method | 'post' = write.method) => send(method, url, body, { key, auth: o.auth });

      const attempts: Array<[string, Promise<Response>]> = [
        ['different body', as(target.url, otherBodyOf(write, target))],
        ['same body, bytes reordered', as(target.url, JSON.stringify(Object.fromEntries(Object.entries(write.body).reverse())))],
        ['different path', as(target.otherUrl, write.body)],
      ];
      // no route takes both POST and PATCH on one path: the other method is PATCH of the created resource, or POST to the collection
      if (write.method === 'patch' && operationOf(document, 'post', collectionOf(write.path))) attempts.push(['different method', as(target.url.replace(/\/[^/]+$/, ''), write.body, 'post')]);
      const itemPatch = Object.keys(document.paths).find((path) => collectionOf(path) === write.path && path !== write.path && document.paths[path].patch);
      if (write.method === 'post' && itemPatch) attempts.push(['different method', as(`${target.url}/${first.body.data.id}`, write.body, 'patch')]);
      // the same resource through its bare id is another path as received
      if (target.id) attempts.push(['bare id', as(target.url.replace(/\/[a-z]+_([a-f0-9]{24})$/, '/$1'), write.body)]);
      if (Object.keys(write.body).length < 2) attempts.splice(1, 1); // one field has one order
      for (const [label, attempt] of attempts) {
        const res = await attempt;
        expect({ label, status: res.status, code: res.body.error?.code }).toEqual({ label, status: 409, code: 'idempotency_key_reused' });
        expect(res.headers['idempotent-replayed']).toBeUndefined();
        expectCompleteEnvelope(res);
      }
      expect(await effectOf(o)).toBe(effectBefore);
      expect(await recordsOf(o.orgId, key)).toHaveLength(1);
    }));

  it("keys are scoped per organization: org B sending org A's key string executes fresh", () =>
    forEachWrite(async (write, o) => {
      const orgB = await createOrg(t.app);
      const targetA = await prepare(write, o);
      const targetB = await prepare(write, orgB);
      const key = newKey();
      const raw = JSON.stringify(write.body);
      const mine = expectStatus(await send(write.method, targetA.url, raw, { key, auth: o.auth }), write.status);
      const before = await effectOf(orgB);
      const theirs = await send(write.method, targetB.url, raw, { key, auth: orgB.auth });
      expect(theirs.status).toBe(write.status);
      expect(theirs.headers['idempotent-replayed']).toBeUndefined();
      expect(await effectOf(orgB)).not.toBe(before);
      if (write.method === 'post') expect(theirs.body.data.id).not.toBe(mine.body.data.id);
      expect(await recordsOf(orgB.orgId, key)).toHaveLength(1);
      expect(await recordsOf(o.orgId, key)).toHaveLength(1);
    }));

  it('an expired record (expires_at in the past) executes fresh and is replaced', () =>
    forEachWrite(async (write, o) => {
      const target = await prepare(write, o);
      const key = newKey();
      const raw = JSON.stringify(write.body);
      const first = expectStatus(await send(write.method, target.url, raw, { key, auth: o.auth }), write.status);
      await t.connection.db
        .update(idempotencyRecords)
        .set({ createdAt: new Date(Date.now() - 25 * 3_600_000), expiresAt: new Date(Date.now() - 3_600_000) })
        .where(and(eq(idempotencyRecords.orgId, o.orgId), eq(idempotencyRecords.key, key)));
      await undo(write, target, o);
      const before = await effectOf(o);

      const again = await send(write.method, target.url, raw, { key, auth: o.auth });
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      const [record] = await recordsOf(o.orgId, key);
      expect(record.status).toBe(again.status);
      expect(record.body).toEqual(again.body);
      expect(record.expiresAt.getTime()).toBeGreaterThan(Date.now() + 23 * 3_600_000);
      if (again.status === 409) {
        // the example again where a field is unique (an agent's handle): the fresh run is the domain's 409, not a replay of the first answer
        expect(again.body.error.code).not.toBe('idempotency_key_reused');
        expect(await effectOf(o)).toBe(before);
      } else {
        expect(again.status).toBe(write.status);
        expect(await effectOf(o)).not.toBe(before);
        if (write.method === 'post') expect(again.body.data.id).not.toBe(first.body.data.id);
      }
    }));
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

  it('every keyed POST: a 403 (missing scope) is not stored: the retry after fixing the scope runs for real', async () => {
    const document = await documentServed();
    const failures: string[] = [];
    for (const write of (await keyedWrites()).filter((w) => w.method === 'post')) {
      const o = await createOrg(t.app);
      // the same resource's read scope: a key of the organization that may not write here
      const scope = document.paths[write.path].post['x-required-scope']?.replace(/:write$/, ':read') as Scope;
      const readOnly = await o.key([scope]);
      const key = newKey();
      const raw = JSON.stringify(write.body);
      const before = await effectOf(o);
      const denied = await send('post', `${API}${write.path}`, raw, { key, auth: readOnly.auth });
      const deniedStored = (await recordsOf(o.orgId, key)).length;
      const unchanged = (await effectOf(o)) === before;
      const retry = await send('post', `${API}${write.path}`, raw, { key, auth: o.auth });
      const outcome = { denied: denied.status, deniedStored, unchanged, retry: retry.status, replayed: retry.headers['idempotent-replayed'], ran: (await effectOf(o)) !== before };
      const expected = { denied: 403, deniedStored: 0, unchanged: true, retry: write.status, replayed: undefined, ran: true };
      if (JSON.stringify(outcome) !== JSON.stringify(expected)) failures.push(`${write.name} (${scope}): ${JSON.stringify(outcome)}`);
    }
    expect(failures).toEqual([]);
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
  it('every DELETE of the document: GET with any key reads, a second DELETE with the same key is 404, nothing is stored', async () => {
    const document = await documentServed();
    const deletes = Object.entries(document.paths)
      .filter(([path, item]) => item.delete && !(`DELETE ${path}` in OPT_OUTS))
      .map(([path]) => path);
    expect(deletes).toEqual(expect.arrayContaining(['/agents/{id}', '/custom_tools/{id}', '/sources/{id}']));
    const failures: string[] = [];
    for (const path of deletes) {
      const o = await createOrg(t.app);
      const url = `${API}${collectionOf(path)}/${await createWithExample(o, collectionOf(path))}`;
      const key = newKey();
      const longKey = `${uniq()}${'x'.repeat(290)}`;
      const read = await send('get', url, undefined, { key: longKey, auth: o.auth });
      const first = await send('delete', url, undefined, { key, auth: o.auth });
      const second = await send('delete', url, undefined, { key, auth: o.auth });
      const outcome = {
        read: read.status,
        readReplayed: read.headers['idempotent-replayed'],
        first: first.status,
        second: second.status,
        code: /not_found$/.test(second.body.error?.code ?? ''),
        secondReplayed: second.headers['idempotent-replayed'],
        stored: (await recordsWithKey(key)).length + (await recordsWithKey(longKey)).length,
      };
      const expected = { read: 200, readReplayed: undefined, first: 200, second: 404, code: true, secondReplayed: undefined, stored: 0 };
      if (JSON.stringify(outcome) !== JSON.stringify(expected)) failures.push(`DELETE ${path}: ${JSON.stringify(outcome)}`);
    }
    expect(failures).toEqual([]);
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

describe('OpenAPI: every keyed write documents the key, the replay header and the reuse conflict', () => {
  it('each of them', async () => {
    const document = await documentServed();
    const failures: string[] = [];
    for (const write of await keyedWrites()) {
      const operation = document.paths[write.path][write.method];
      const success = operation.responses?.[String(write.status)];
      const outcome = {
        keys: (operation.parameters ?? []).filter((p) => p.in === 'header' && p.name === 'Idempotency-Key').length,
        replayed: Boolean(success?.headers?.['Idempotent-Replayed']),
        conflict: operation.responses?.['409']?.description?.includes('idempotency_key_reused') ?? false,
        rateLimit: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'].every((header) => Object.keys(success?.headers ?? {}).includes(header)),
      };
      if (JSON.stringify(outcome) !== JSON.stringify({ keys: 1, replayed: true, conflict: true, rateLimit: true })) failures.push(`${write.name}: ${JSON.stringify(outcome)}`);
    }
    expect(failures).toEqual([]);
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
