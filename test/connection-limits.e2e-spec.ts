import { request as httpRequest } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

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

const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

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
    await settle();
    const open = () => held.filter((h) => !h.isClosed()).length;
    expect(open()).toBe(8);
    // the six closed are the six opened first
    expect(held.map((h) => h.isClosed())).toEqual([...Array(6).fill(true), ...Array(8).fill(false)]);

    expect(await get(port, '127.0.0.3', '/api/v1/org', { authorization: auth })).toBe(200);
    expect(await get(port, '127.0.0.3', '/healthz')).toBe(200);
    expect(await get(port, '127.0.0.3', '/readyz')).toBe(200);
    await settle();
    expect(open()).toBeLessThanOrEqual(8);
  });
});

describe('HTTP_MAX_CONNECTIONS_PER_ADDRESS', () => {
  let t: TestApp;
  let port: number;
  const held: Held[] = [];
  beforeAll(async () => {
    t = await createTestApp({ httpMaxConnections: 8, httpMaxConnectionsPerAddress: 3 });
    port = await listen(t);
  });
  afterAll(async () => {
    for (const { socket } of held) socket.destroy();
    await t.close();
  });

  it('one address keeps at most that many connections: its own oldest idle one is closed for a new one', async () => {
    const mine: Held[] = [];
    for (let i = 0; i < 5; i++) mine.push(await holdIdleAfterAnswer(port, '127.0.0.2'));
    held.push(...mine);
    await settle();
    expect(mine.map((h) => h.isClosed())).toEqual([true, true, false, false, false]);
  });

  it('a new connection from an address whose connections are all answering requests is refused; other addresses are served', async () => {
    // bodies announced and never sent: each connection is answering its request until the request timeout
    const busy: Held[] = [];
    for (let i = 0; i < 3; i++) {
      busy.push(await hold(port, '127.0.0.4', `POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`));
    }
    held.push(...busy);
    await settle();
    const refused = await get(port, '127.0.0.4', '/healthz');
    expect(refused).toMatch(/ECONNRESET|socket hang up|EPIPE/);
    expect(busy.every((h) => !h.isClosed())).toBe(true);
    expect(await get(port, '127.0.0.3', '/healthz')).toBe(200);
    expect(t.logs.join('')).toContain('connection refused: HTTP_MAX_CONNECTIONS_PER_ADDRESS');
  });
});
