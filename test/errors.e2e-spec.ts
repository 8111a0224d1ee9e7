import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Response } from 'supertest';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { TestOnlyModule } from './support/test-only.module';

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp({}, { imports: [TestOnlyModule] });
  org = await createOrg(t.app);
});
afterAll(() => t.close());

/** Every response carries X-Request-ID equal to the body's request_id */
function expectRequestIdMatches(res: Response): string {
  const header = res.headers['x-request-id'];
  expect(typeof header).toBe('string');
  const inBody = res.body.meta ? res.body.meta.request_id : res.body.error.request_id;
  expect(inBody).toBe(header);
  return header;
}

function expectError(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expectRequestIdMatches(res);
}

describe('every response, success or error, carries X-Request-ID equal to request_id', () => {
  test('200 success', async () => {
    const res = await t.http.get('/api/v1/org').set('Authorization', org.auth);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'meta']);
    expectRequestIdMatches(res);
  });

  test('200 public banner', async () => {
    const res = await t.http.get('/api/v1/');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ name: 'Agent Platform REST API', version: 'v1', docs: '/docs' });
    // the docs link (the interactive reference, outside the API prefix) works without a key
    expect((await t.http.get(res.body.data.docs)).status).toBe(200);
    expectRequestIdMatches(res);
  });

  test('401 unauthorized', async () => {
    expectError(await t.http.get('/api/v1/org'), 401, 'unauthorized');
  });

  test('403 insufficient_scope', async () => {
    const key = await org.key(['team:read']);
    expectError(await t.http.get('/api/v1/org').set('Authorization', key.auth), 403, 'insufficient_scope');
  });

  test('404 not_found for an unknown route, with and without a key', async () => {
    expectError(await t.http.get('/api/v1/no-such-thing'), 404, 'not_found');
    expectError(await t.http.get('/api/v1/no-such-thing').set('Authorization', org.auth), 404, 'not_found');
    expectError(await t.http.delete('/api/v1/org').set('Authorization', org.auth), 404, 'not_found');
    expectError(await t.http.get('/not-under-the-prefix'), 404, 'not_found');
  });

  test('413 payload_too_large for a body over 1 MiB', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    const res = await t.http.post('/api/v1/test-only/echo').set('Authorization', org.auth).set('Content-Type', 'application/json').send(body);
    expectError(res, 413, 'payload_too_large');
  });

  test('a body of exactly 1 MiB is accepted by the parser', async () => {
    const padding = 1024 * 1024 - JSON.stringify({ name: 'a', note: '' }).length;
    const body = JSON.stringify({ name: 'a', note: ' '.repeat(padding) });
    expect(Buffer.byteLength(body)).toBe(1024 * 1024);
    const res = await t.http.post('/api/v1/test-only/echo').set('Authorization', org.auth).set('Content-Type', 'application/json').send(body);
    expect(res.status).toBe(201);
  });

  test('422 validation_failed', async () => {
    const res = await t.http.post('/api/v1/test-only/echo').set('Authorization', org.auth).send({});
    expectError(res, 422, 'validation_failed');
    expect(res.body.error.details.fields.name).toEqual(expect.arrayContaining([expect.any(String)]));
  });

  test('500 internal_error', async () => {
    expectError(await t.http.get('/api/v1/test-only/boom').set('Authorization', org.auth), 500, 'internal_error');
  });
});

describe('malformed JSON → 422 validation_failed saying the body is not valid JSON', () => {
  test.each([['{bad'], ['{"name": "a",}'], ['[1, 2'], ['nul']])('%s', async (raw) => {
    const res = await t.http.post('/api/v1/test-only/echo').set('Authorization', org.auth).set('Content-Type', 'application/json').send(raw);
    expectError(res, 422, 'validation_failed');
    expect(res.body.error.message).toMatch(/not valid JSON/);
    expect(res.body.error.details).toEqual({ fields: { body: ['is not valid JSON'] }, field_count: 1 });
  });

  test('only once the key is valid: without one the body is never parsed (401 on a route that takes a key, 404 on an unknown path)', async () => {
    expectError(await t.http.post('/api/v1/agents').set('Content-Type', 'application/json').send('{bad'), 401, 'unauthorized');
    expectError(await t.http.post('/api/v1/org').set('Content-Type', 'application/json').send('{bad'), 404, 'not_found');
    expectError(await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').send('{bad'), 422, 'validation_failed');
  });

  test('a JSON body that is not an object → 422 naming the body', async () => {
    const res = await t.http.post('/api/v1/test-only/echo').set('Authorization', org.auth).set('Content-Type', 'application/json').send('[1,2]');
    expectError(res, 422, 'validation_failed');
    expect(res.body.error.details.fields.body).toBeDefined();
  });
});

describe('unknown body fields are rejected (no silent mass assignment)', () => {
  test('an extra field → 422 naming it', async () => {
    const res = await t.http.post('/api/v1/test-only/echo').set('Authorization', org.auth).send({ name: 'a', org_id: 'org_000000000000000000000000' });
    expectError(res, 422, 'validation_failed');
    expect(Object.keys(res.body.error.details.fields)).toEqual(['org_id']);
  });

  test('the same body without it is accepted', async () => {
    const res = await t.http.post('/api/v1/test-only/echo').set('Authorization', org.auth).send({ name: 'a' });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({ name: 'a' });
  });
});

describe('500 internal_error shows no internals and is logged with the request id', () => {
  test('body has a fixed message; the log line has the request id and the cause', async () => {
    const res = await t.http.get('/api/v1/test-only/boom').set('Authorization', org.auth).set('X-Request-ID', 'boom-trace-1');
    expectError(res, 500, 'internal_error');
    const text = JSON.stringify(res.body);
    for (const leak of ['ECONNSECRET', 'hunter2', 'db-internal', 'stack', 'at ', '.ts']) expect(text).not.toContain(leak);
    expect(res.body.error.request_id).toBe('boom-trace-1');
    const logged = t.logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'unhandled error' && line.request_id === 'boom-trace-1');
    expect(logged).toBeDefined();
    expect(logged.level).toBe('error');
    expect(logged.err.message).toContain('ECONNSECRET');
  });
});

describe('X-Request-ID: a well-formed incoming id (1–128 visible ASCII) is kept, otherwise one is generated', () => {
  const GENERATED = /^req_[0-9a-f]{32}$/;

  test.each([['abc'], ['a'], ['x'.repeat(128)], ['0f8fad5b-d9cb-469f-a165-70867728950e'], ['trace:1/2;3=<4>&"5"']])('kept: %s', async (id) => {
    const res = await t.http.get('/api/v1/').set('X-Request-ID', id);
    expect(res.headers['x-request-id']).toBe(id);
    expect(res.body.meta.request_id).toBe(id);
  });

  test.each([
    ['over-long (129)', 'x'.repeat(129)],
    ['a space', 'abc def'],
    ['a tab', 'abc\tdef'],
    ['Latin-1 non-ASCII', 'r\u00e9q'],
    ['empty', ''],
  ])('replaced: %s', async (_name, id) => {
    const res = await t.http.get('/api/v1/').set('X-Request-ID', id);
    expect(res.headers['x-request-id']).toMatch(GENERATED);
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  test('generated ids differ per request', async () => {
    const a = await t.http.get('/api/v1/');
    const b = await t.http.get('/api/v1/');
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  /** Raw HTTP, because Node's client refuses to send these header values. */
  async function rawRequest(headerLines: string[]): Promise<string> {
    const server = t.app.getHttpServer() as Server;
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => chunks.push(Buffer.from(chunk)));
      socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
      socket.on('error', reject);
      socket.write(Buffer.concat([Buffer.from('GET /api/v1/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n'), ...headerLines.map((line) => Buffer.from(line + '\r\n', 'latin1')), Buffer.from('\r\n')]));
    });
  }

  test('UTF-8 multi-byte id → replaced', async () => {
    const response = await rawRequest([Buffer.from('X-Request-ID: r\u00e9q-\u2603', 'utf8').toString('latin1')]);
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    expect(response).toMatch(/\r\nx-request-id: req_[0-9a-f]{32}\r\n/i);
  });

  test('header-injection attempt (a second header smuggled after the id) cannot reach the response', async () => {
    // a bare LF inside the value, and a repeated header: neither may become a response header
    const response = await rawRequest(['X-Request-ID: abc\nSet-Cookie: injected=1']);
    expect(response).not.toMatch(/set-cookie/i);
    const repeated = await rawRequest(['X-Request-ID: one', 'X-Request-ID: two']);
    expect(repeated).toMatch(/^HTTP\/1\.1 200/);
    const ids = [...repeated.matchAll(/\r\nx-request-id: ([^\r\n]*)\r\n/gi)].map((match) => match[1]);
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(/^(one|req_[0-9a-f]{32})$/);
  });
});

describe('database unreachable → 503 service_unavailable in the envelope', () => {
  test('a closed database answers 503 with Retry-After, never 500', async () => {
    const broken = await createTestApp();
    try {
      const subject = await createOrg(broken.app);
      await broken.connection.close(); // either engine: the PGlite instance or the server pool is gone
      const res = await broken.http.get('/api/v1/org').set('Authorization', subject.auth);
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body.error.request_id).toBe(res.headers['x-request-id']);
      // public endpoints need no database
      expect((await broken.http.get('/api/v1/')).status).toBe(200);
    } finally {
      await broken.close().catch(() => undefined);
    }
  });
});

describe('a path that is not valid percent-encoding', () => {
  it('is 404 not_found in the envelope (it names no resource), with its request id and log line', async () => {
    const t = await createTestApp();
    try {
      const res = await t.http.get('/api/v1/agents/%E0%A4%A').set('X-Request-ID', 'bad-percent-1');
      expect(res.status).toBe(404);
      expect(res.headers['x-request-id']).toBe('bad-percent-1');
      expect(res.body).toEqual({ error: { code: 'not_found', message: expect.any(String), request_id: 'bad-percent-1' } });
      const lines = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.request_id === 'bad-percent-1' && entry.msg === 'request');
      expect(lines).toEqual([expect.objectContaining({ status: 404, path: '/api/v1/agents/%E0%A4%A' })]);
    } finally {
      await t.close();
    }
  });
});

describe('one pipeline: routing, bodies and log lines alike on every route', () => {
  let t: TestApp;
  let org: TestOrg;
  let agentId: string;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
    const res = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'pipeline', name: 'pipeline', instructions: 'Be brief.' });
    expect(res.status).toBe(201);
    agentId = res.body.data.id;
  });
  afterAll(() => t.close());

  test.each([
    ['a trailing slash', () => `/api/v1/agents/${agentId}/`],
    ['another letter case of the path', () => `/API/V1/Agents/${agentId}`],
    ['a percent-encoded id', () => `/api/v1/agents/${agentId.replace('agent_', 'agent%5F')}`],
  ])('%s reaches the same route', async (_case, path) => {
    const res = await t.http.get(path()).set('Authorization', org.auth);
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(agentId);
    // the same representation, so the same entity tag as the canonical path's
    const canonical = await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth);
    expect(res.headers.etag).toBe(canonical.headers.etag);
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it('every answer, success or error, is kept by no cache, sniffed by no browser and framed by no page', async () => {
    const answers = [
      await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth),
      await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({}),
      await t.http.get('/api/v1/org'),
      await t.http.get('/api/v1/nothing-here').set('Authorization', org.auth),
      await t.http.get('/api/v1/openapi.json'),
      await t.http.get('/healthz'),
    ];
    expect(answers.map((res) => res.status)).toEqual([200, 422, 401, 404, 200, 200]);
    for (const res of answers) {
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
    }
  });

  it('HEAD of a GET route: its status and headers, no body', async () => {
    const res = await t.http.head(`/api/v1/agents/${agentId}`).set('Authorization', org.auth);
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeDefined();
    expect(res.text ?? '').toBe('');
  });

  it('a body on a GET is read like any other: not JSON → 422, over 1 MiB → 413', async () => {
    const bad = await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth).set('Content-Type', 'application/json').send('{bad');
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_failed');
    const big = await t.http.get('/api/v1/org').set('Authorization', org.auth).set('Content-Type', 'application/json').send(`{"a":"${'x'.repeat(1024 * 1024)}"}`);
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('payload_too_large');
  });

  it('Content-Length: 0 with a JSON Content-Type is an empty body: a GET is served, a POST is the empty object, an empty gzip body is not valid gzip', async () => {
    const get = await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth).set('Content-Type', 'application/json').set('Content-Length', '0');
    expect(get.status).toBe(200);
    const post = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').set('Content-Length', '0');
    expect(post.status).toBe(422);
    expect(Object.keys(post.body.error.details.fields)).toEqual(expect.arrayContaining(['handle', 'name', 'instructions']));
    const zipped = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').set('Content-Length', '0');
    expect(zipped.status).toBe(422);
    expect(zipped.body.error.details.fields).toEqual({ body: ['is not validly compressed'] });
  });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)('a %s body that inflates past 1 MiB is 413, however small it was sent', async (encoding, compress) => {
    const bomb = compress(Buffer.from(`{"a":"${' '.repeat(8 * 1024 * 1024)}"}`));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const res = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').set('Content-Encoding', encoding).serialize(() => bomb as unknown as string).send({});
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('a gzip body is decompressed and then read as JSON; an unknown encoding is 422', async () => {
    const body = gzipSync(JSON.stringify({ handle: 'zipped', name: 'zipped', instructions: 'Be brief.' }));
    const zipped = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').serialize(() => body as unknown as string).send({});
    expect(zipped.status).toBe(201);
    const odd = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').set('Content-Encoding', 'compress').send('{}');
    expect(odd.status).toBe(422);
  });

  it('one log line per request, answered by a route, the filter or the not-found handler', async () => {
    await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth).set('X-Request-ID', 'pipe-log-1');
    await t.http.get(`/api/v1/agents/${agentId}?x=1`).set('Authorization', org.auth).set('X-Request-ID', 'pipe-log-2');
    await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', 'Bearer svc_live_nope').set('X-Request-ID', 'pipe-log-3');
    await t.http.get('/nowhere').set('X-Request-ID', 'pipe-log-4');
    await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').set('X-Request-ID', 'pipe-log-5').send('{bad');
    const lines = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request' && String(entry.request_id).startsWith('pipe-log-'));
    expect(lines.map((line) => [line.request_id, line.status, line.path])).toEqual([
      ['pipe-log-1', 200, `/api/v1/agents/${agentId}`],
      ['pipe-log-2', 200, `/api/v1/agents/${agentId}`],
      ['pipe-log-3', 401, `/api/v1/agents/${agentId}`],
      ['pipe-log-4', 404, '/nowhere'],
      ['pipe-log-5', 422, '/api/v1/agents'],
    ]);
    expect(lines[0]).toMatchObject({ org_id: org.orgId, key_id: org.keyId });
  });
});
