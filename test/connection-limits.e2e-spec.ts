import { request as httpRequest } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { TenantConcurrencyGuard } from '../src/guards/tenant-concurrency.guard';
import { httpLayerOf } from '../src/http/adapter';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { until } from './support/until';

/**
 * No lock-out without a key: a flood of idle or slow connections from one
 * client address cannot keep other clients, or the probes, from being
 * answered. Every loopback address is this host, so 127.0.0.2 plays the
 * flooding client and 127.0.0.3 the others. The caps are small so that the
 * test is quick; the code path is the one the defaults take.
 */

interface Held {
  socket: Socket;
  closed: Promise<void>;
  isClosed(): boolean;
}

async function listen(t: TestApp): Promise<number> {
  await t.app.listen(0, '127.0.0.1');
  return (t.app.getHttpServer().address() as AddressInfo).port;
}

/** A connection from `localAddress` that writes `head` (maybe nothing) and then sends nothing more. */
async function hold(port: number, localAddress: string, head = ''): Promise<Held> {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  let closed = false;
  const done = new Promise<void>((resolve) => socket.once('close', () => ((closed = true), resolve())));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  if (head) socket.write(head);
  return { socket, closed: done, isClosed: () => closed };
}

/** A keep-alive connection that got one answer and now sits idle, as a client of the keyless banner would. */
async function holdIdleAfterAnswer(port: number, localAddress: string): Promise<Held> {
  const held = await hold(port, localAddress);
  const answered = new Promise<void>((resolve) => {
    let text = '';
    held.socket.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\r\n\r\n') && text.endsWith('}')) resolve();
    });
  });
  held.socket.write('GET /api/v1/ HTTP/1.1\r\nHost: x\r\n\r\n');
  await answered;
  return held;
}

/** One request on a new connection from `localAddress`; the status, or the error that ended it. */
function get(port: number, localAddress: string, path: string, headers: Record<string, string> = {}): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, localAddress, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end();
  });
}

describe('more idle connections than HTTP_MAX_CONNECTIONS from one address', () => {
  let t: TestApp;
  let port: number;
  let auth: string;
  const held: Held[] = [];
  beforeAll(async () => {
    t = await createTestApp({ httpMaxConnections: 8, httpMaxConnectionsPerAddress: 8 });
    port = await listen(t);
    auth = (await createOrg(t.app)).auth;
  });
  afterAll(async () => {
    for (const { socket } of held) socket.destroy();
    await t.close();
  });

  it('closes the idle ones, oldest first, so that another client and the probes are answered', async () => {
    // answered keep-alive connections, connections that never send, and headers that never end
    for (let i = 0; i < 8; i++) held.push(await holdIdleAfterAnswer(port, '127.0.0.2'));
    for (let i = 0; i < 3; i++) held.push(await hold(port, '127.0.0.2'));
    for (let i = 0; i < 3; i++) held.push(await hold(port, '127.0.0.2', 'GET /api/v1/ HTTP/1.1\r\nHost: x\r\n'));
    // the server closed them as the newcomers came: wait until this side has seen it
    const open = () => held.filter((h) => !h.isClosed()).length;
    await until(() => open() <= 8);
    expect(open()).toBe(8);
    // the six closed are the six opened first
    expect(held.map((h) => h.isClosed())).toEqual([...Array(6).fill(true), ...Array(8).fill(false)]);

    expect(await get(port, '127.0.0.3', '/api/v1/org', { authorization: auth })).toBe(200);
    expect(await get(port, '127.0.0.3', '/healthz')).toBe(200);
    expect(await get(port, '127.0.0.3', '/readyz')).toBe(200);
    await until(() => open() <= 8);
  });
});

describe('HTTP_MAX_CONNECTIONS_PER_ADDRESS', () => {
  let t: TestApp;
  let port: number;
  let auth: string;
  const held: Held[] = [];
  beforeAll(async () => {
    t = await createTestApp({ httpMaxConnections: 8, httpMaxConnectionsPerAddress: 3, httpBodyGraceMs: 600_000 });
    port = await listen(t);
    auth = (await createOrg(t.app)).auth;
  });
  afterAll(async () => {
    for (const { socket } of held) socket.destroy();
    await t.close();
  });

  it('one address keeps at most that many connections: its own oldest idle one is closed for a new one', async () => {
    const mine: Held[] = [];
    for (let i = 0; i < 5; i++) mine.push(await holdIdleAfterAnswer(port, '127.0.0.2'));
    held.push(...mine);
    await until(() => mine.filter((h) => h.isClosed()).length >= 2);
    expect(mine.map((h) => h.isClosed())).toEqual([true, true, false, false, false]);
  });

  it('a new connection from an address whose connections are all answering requests is refused; other addresses are served', async () => {
    // keyed bodies announced and not sent, within the body-progress budget (a long grace here):
    // each connection is answering its request
    const busy: Held[] = [];
    for (let i = 0; i < 3; i++) busy.push(await hold(port, '127.0.0.4', slowPost(auth)));
    held.push(...busy);
    await until(() => httpLayerOf(fastifyOf(t)).connections.counts.bodies === 3);
    const refused = await get(port, '127.0.0.4', '/healthz');
    expect(refused).toMatch(/ECONNRESET|socket hang up|EPIPE/);
    expect(busy.every((h) => !h.isClosed())).toBe(true);
    expect(await get(port, '127.0.0.3', '/healthz')).toBe(200);
    expect(t.logs.join('')).toContain('connection refused: HTTP_MAX_CONNECTIONS_PER_ADDRESS');
  });
});

describe('slow bodies without a key', () => {
  let t: TestApp;
  let port: number;
  let auth: string;
  const held: Held[] = [];
  beforeAll(async () => {
    t = await createTestApp({ httpMaxConnections: 8, httpMaxConnectionsPerAddress: 4 });
    port = await listen(t);
    auth = (await createOrg(t.app)).auth;
  });
  afterAll(async () => {
    for (const { socket } of held) socket.destroy();
    await t.close();
  });

  it('are answered from their headers at once, their connections idle from then on; /healthz and a valid key are answered throughout', async () => {
    const requests = [
      slowPost(),
      slowPost('Bearer svc_live_this-key-does-not-exist-0000000000000'),
      slowPost('Bearer malformed'),
      // a public route does not read bodies either
      'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a',
    ];
    const keyless: Held[] = [];
    for (let round = 0; round < 5; round++) {
      for (const head of requests) {
        const connection = await hold(port, '127.0.0.2', head);
        keyless.push(connection);
        // answered at once, without the body; the connection stays open (keep-alive) but counts as idle
        expect(await answerOn(connection)).toMatch(head.startsWith('GET /healthz') ? /^HTTP\/1\.1 200 / : /^HTTP\/1\.1 401 /);
      }
      expect(await get(port, '127.0.0.3', '/healthz')).toBe(200);
      expect(await get(port, '127.0.0.3', '/api/v1/org', { authorization: auth })).toBe(200);
      expect(await get(port, '127.0.0.2', '/healthz')).toBe(200);
    }
    held.push(...keyless);
    await until(() => keyless.filter((h) => !h.isClosed()).length <= 4);
    // twenty connections still sending bodies from one address, and it holds at most its bound, the oldest closed first
    const open = keyless.filter((h) => !h.isClosed()).length;
    expect(open).toBeLessThanOrEqual(4);
    expect(keyless.map((h) => h.isClosed())).toEqual([...Array(20 - open).fill(true), ...Array(open).fill(false)]);
  });

  it('are never decompressed or parsed: a corrupt gzip body or invalid JSON without a key is a 401, with a key a 422', async () => {
    const corrupt = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
    const send = (headers: Record<string, string>, body: string) => t.http.post('/api/v1/agents').set(headers).send(body);
    const gzipWithout = await send(corrupt, 'not gzip at all');
    expect(gzipWithout.status).toBe(401);
    expect(gzipWithout.body.error.code).toBe('unauthorized');
    expect((await send({ 'content-type': 'application/json' }, '{"handle": ')).status).toBe(401);
    expect((await send({ ...corrupt, authorization: auth }, 'not gzip at all')).status).toBe(422);
    expect((await send({ 'content-type': 'application/json', authorization: auth }, '{"handle": ')).status).toBe(422);
  });
});

describe('slow bodies with a key', () => {
  let t: TestApp;
  let port: number;
  let org: TestOrg;
  const held: Held[] = [];
  beforeAll(async () => {
    // a short grace so that the test need not wait long; the rate is the default
    t = await createTestApp({ httpMaxConnections: 8, httpMaxConnectionsPerAddress: 8, httpBodyGraceMs: 100, orgConcurrency: 10, keyConcurrency: 10 });
    port = await listen(t);
    org = await createOrg(t.app);
  });
  afterAll(async () => {
    for (const { socket } of held) socket.destroy();
    await t.close();
  });

  it('count as busy only within the body-progress budget: past it, the oldest is closed to let a new connection in', async () => {
    const slow: Held[] = [];
    for (let i = 0; i < 8; i++) slow.push(await hold(port, '127.0.0.2', slowPost(org.auth)));
    held.push(...slow);
    const connections = httpLayerOf(fastifyOf(t)).connections;
    await until(() => connections.counts.bodies === 8);
    // every body started before this: after the grace (and a millisecond per KiB sent) it is behind its budget
    await new Promise((resolve) => setTimeout(resolve, 100 + 50));
    expect(await get(port, '127.0.0.3', '/healthz')).toBe(200);
    expect(await get(port, '127.0.0.3', '/api/v1/org', { authorization: org.auth })).toBe(200);
    await until(() => slow.some((h) => h.isClosed()));
    // one closed per new connection that found no room (the first one's may have closed before the second came)
    const closed = slow.filter((h) => h.isClosed()).length;
    expect(closed).toBeGreaterThanOrEqual(1);
    expect(slow.map((h) => h.isClosed())).toEqual([...Array(closed).fill(true), ...Array(8 - closed).fill(false)]);
  });
});

describe("an authenticated client's slow bodies hold its own key's and organization's slots", () => {
  let t: TestApp;
  let port: number;
  const held: Held[] = [];
  beforeAll(async () => {
    t = await createTestApp({ keyConcurrency: 2, orgConcurrency: 3, dbStatementTimeoutMs: 200 });
    port = await listen(t);
  });
  afterAll(async () => {
    for (const { socket } of held) socket.destroy();
    await t.close();
  });

  it('a key with two slow bodies waits for its own slots (then 503, its body unread); its organization\'s other key and other organizations are served', async () => {
    const org = await createOrg(t.app);
    const other = await createOrg(t.app);
    const guard = t.app.get(TenantConcurrencyGuard);
    const second = await org.key(['org:read']);
    for (let i = 0; i < 2; i++) held.push(await hold(port, '127.0.0.2', slowPost(org.auth)));
    await until(() => guard.keys.held(org.keyId) === 2);
    const third = await hold(port, '127.0.0.2', slowPost(org.auth));
    held.push(third);
    expect(await answerOn(third)).toMatch(/^HTTP\/1\.1 503 /);
    expect(httpLayerOf(fastifyOf(t)).connections.counts.bodies).toBe(2);
    expect(await get(port, '127.0.0.3', '/api/v1/org', { authorization: second.auth })).toBe(200);
    expect(await get(port, '127.0.0.3', '/api/v1/org', { authorization: other.auth })).toBe(200);
    expect(await get(port, '127.0.0.3', '/healthz')).toBe(200);
    expect(guard.orgs.held(org.orgId)).toBe(2);
  });
});

describe('a client that hangs up while its request waits for its tenant\'s slots, before its body', () => {
  let t: TestApp;
  let port: number;
  const held: Held[] = [];
  beforeAll(async () => {
    t = await createTestApp({ keyConcurrency: 1, orgConcurrency: 1 });
    port = await listen(t);
  });
  afterAll(async () => {
    for (const { socket } of held) socket.destroy();
    await t.close();
  });

  it('gives the slots back once it gets them: the tenant is served again', async () => {
    const org = await createOrg(t.app);
    const guard = t.app.get(TenantConcurrencyGuard);
    const first = await hold(port, '127.0.0.2', slowPost(org.auth));
    held.push(first);
    await until(() => guard.keys.held(org.keyId) === 1);
    const waiting = await hold(port, '127.0.0.2', slowPost(org.auth));
    held.push(waiting);
    await until(() => guard.keys.waiting(org.keyId) === 1);
    // the waiting one leaves, then the first one: the slot passes to the waiter, whose client is gone
    waiting.socket.destroy();
    await waiting.closed;
    first.socket.destroy();
    await until(() => guard.keys.held(org.keyId) === 0 && guard.orgs.held(org.orgId) === 0);
    expect(await get(port, '127.0.0.3', '/api/v1/org', { authorization: org.auth })).toBe(200);
  });
});

/** A POST to a route that reads a body, its headers announcing 100 KB and only the first byte sent. */
function slowPost(authorization?: string): string {
  const auth = authorization ? `Authorization: ${authorization}\r\n` : '';
  return `POST /api/v1/agents HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`;
}

/** The answer's status line and headers on a held connection. */
function answerOn(held: Held): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    held.socket.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\r\n\r\n')) resolve(text.slice(0, text.indexOf('\r\n\r\n')));
    });
  });
}

function fastifyOf(t: TestApp): FastifyInstance {
  return t.app.getHttpAdapter().getInstance() as FastifyInstance;
}
