import { connect, type Socket } from 'node:net';
import { ensureBuilt, startServer, waitForOutput, type RunningServer } from './support/processes';

/**
 * Clients cannot hold the server. The built server as deployed,
 * with short limits so that the test is quick; the defaults are in
 * src/config/config.ts (30 s request, 15 s headers, 1000 connections).
 *
 * Each cut is proven by what ended the exchange (the status and code a
 * timeout answers, the log line naming it) and by a lower bound (not before
 * the configured limit), never by how soon after it: a loaded machine delays
 * everything, and latency is the bench's to measure. A client that is never
 * cut would hold the exchange until the test's own timeout.
 */
jest.setTimeout(120_000);
beforeAll(() => ensureBuilt());

interface RawExchange {
  /** everything the server sent before the connection ended */
  text: string;
  /** ms from the first byte written to the connection's end */
  ms: number;
}

/** Writes `head` and `body` on a new connection, then waits (sending nothing more) until the server ends it. */
function exchange(origin: URL, head: string, body = ''): { socket: Socket; done: Promise<RawExchange> } {
  const socket = connect(Number(origin.port), origin.hostname);
  const started = Date.now();
  const done = new Promise<RawExchange>((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ text, ms: Date.now() - started }));
  });
  socket.write(head + body);
  return { socket, done };
}

/** The demo organization's key, from the ready-to-paste curl line the first run prints on stderr. */
async function demoKey(server: RunningServer): Promise<string> {
  return (await waitForOutput(server, /^curl -H "Authorization: Bearer (svc_live_[A-Za-z0-9_-]+)"/m, 10_000, 'stderr'))[1];
}

/** Only a request with a valid key has its body read: every body these tests send carries one. */
const post = (length: number, requestId: string, key: string) =>
  `POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Request-ID: ${requestId}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** `head` asking for `100 Continue` before its body. */
const expectContinue = (head: string) => head.replace('\r\n\r\n', '\r\nExpect: 100-continue\r\n\r\n');

/** Resolves at the `100 Continue` the server writes once it is reading the body: no sleep guesses when that is. */
function continued(socket: Socket): Promise<void> {
  return new Promise((resolve) => socket.on('data', (chunk) => String(chunk).startsWith('HTTP/1.1 100 ') && resolve()));
}

/** A server for the enclosing describe, started with `settings` before its tests and killed after them; its demo key. */
function serverForDescribe(settings: Record<string, string>): { server: RunningServer; origin: URL; key: string } {
  const running = {} as { server: RunningServer; origin: URL; key: string };
  beforeAll(async () => {
    running.server = await startServer({ PGLITE_DIR: 'memory', SHUTDOWN_DRAIN_DELAY_MS: '0', ...settings });
    running.origin = new URL(running.server.address);
    running.key = await demoKey(running.server);
  });
  afterAll(async () => {
    if (running.server.child.exitCode === null) await running.server.stop('SIGKILL');
  });
  return running;
}

describe('slow and oversized clients', () => {
  const running = serverForDescribe({ HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_HEADERS_TIMEOUT_MS: '1000' });

  test('a Content-Length over 1 MiB: 413 before the body, and the connection is closed', async () => {
    for (const [length, sent] of [
      [200 * 1024 * 1024, 'x'.repeat(1000)],
      [2 * 1024 * 1024, '{"a":1}'],
    ] as const) {
      // the body never arrives whole: waiting for it would end in a 408 at the request timeout instead
      const { text } = await exchange(running.origin, post(length, `big-${length}`, running.key), sent).done;
      expect(text).toMatch(/^HTTP\/1\.1 413 /);
      expect(text).toMatch(/\r\nconnection: close\r\n/i);
      expect(text).toContain('"code":"payload_too_large"');
    }
  });

  test('a body that stalls is cut at the request timeout: 408 request_timeout in the envelope, logged with its request id', async () => {
    const { text, ms } = await exchange(running.origin, post(100 * 1024, 'stalled-body', running.key), '{"handle":').done;
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/\r\nX-Request-ID: stalled-body\r\n/i);
    expect(text).toContain('"code":"request_timeout"');
    // HTTP_REQUEST_TIMEOUT_MS=2000: not before it
    expect(ms).toBeGreaterThanOrEqual(1900);
    await waitForOutput(running.server, /"request_id":"stalled-body","trace_id":"[0-9a-f]{32}","method":"POST","path":"\/api\/v1\/agents","status":408,"duration_ms":/);
  });

  test('a client that hangs up in the middle of its body is not a database outage', async () => {
    const { socket, done } = exchange(running.origin, expectContinue(post(1000, 'hung-up-body', running.key)));
    await continued(socket);
    socket.write('{"handle":');
    socket.destroy();
    await done;
    // the filter's lines come after the socket's end, and log lines are written every 100 ms
    await new Promise((resolve) => setTimeout(resolve, 500));
    const lines = running.server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"hung-up-body"'));
    expect(lines.filter((line) => /database unavailable|unhandled error/.test(line))).toEqual([]);
    const res = await fetch(`${running.server.address}/openapi.json`);
    expect(res.status).toBe(200);
  });

  test('headers that never end are cut at the headers timeout', async () => {
    const { text, ms } = await exchange(running.origin, 'GET /api/v1/ HTTP/1.1\r\nHost: x\r\n').done;
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toContain('"code":"request_timeout"');
    // HTTP_HEADERS_TIMEOUT_MS=1000: not before it
    expect(ms).toBeGreaterThanOrEqual(900);
  });
});

describe('connection cap', () => {
  // Long request timeout and body grace: a loaded machine may take seconds between the held requests and the
  // newcomer, and the held ones must still be answering requests (not cut, not behind their body budget) then.
  const running = serverForDescribe({ HTTP_REQUEST_TIMEOUT_MS: '120000', HTTP_BODY_GRACE_MS: '120000', HTTP_MAX_CONNECTIONS: '4' });

  test('open connections are capped: when every one is answering a request the next is closed unanswered, and accepted again once one closes', async () => {
    // Bodies announced and not sent: each connection is busy with its request (idle ones would be closed for the
    // newcomer). `100 Continue` comes once the server is reading the body, so no sleep guesses when that is.
    const held = [0, 1, 2, 3].map((i) => {
      const request = exchange(running.origin, expectContinue(post(100, `held-${i}`, running.key)));
      return { ...request, reading: continued(request.socket) };
    });
    try {
      await Promise.all(held.map(({ reading }) => reading));
      const refused = await exchange(running.origin, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n').done;
      expect(refused.text).toBe('');
      await waitForOutput(running.server, /"max_connections":4,.*"msg":"connection refused: HTTP_MAX_CONNECTIONS connections are answering requests"/);
      // the newcomer was refused, not let in by closing one of them
      expect(held.map(({ socket }) => socket.destroyed)).toEqual([false, false, false, false]);
    } finally {
      for (const { socket } of held) socket.destroy();
    }
    // the server sees the held connections close a moment later: retry until it has (the test's timeout bounds it)
    let status = 0;
    while (status !== 200) {
      status = await fetch(`${running.origin.origin}/healthz`).then((res) => res.status, () => 0);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
});

describe('shutdown deadline', () => {
  test('a client still sending at the deadline is cut and named in the log; nothing was lost: exit 0', async () => {
    const server = await startServer({ PGLITE_DIR: 'memory', SHUTDOWN_DRAIN_DELAY_MS: '300', SHUTDOWN_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '60000', HTTP_HEADERS_TIMEOUT_MS: '60000' });
    const origin = new URL(server.address);
    const slow = exchange(origin, expectContinue(post(100, 'slow-at-deadline', await demoKey(server))));
    // the server is reading its body when the signal comes
    await continued(slow.socket);
    slow.socket.write('{"handle":');
    // keep it alive: a byte every 200 ms, so no request timeout would ever end it
    const trickle = setInterval(() => slow.socket.write(' '), 200);
    try {
      const signalled = Date.now();
      server.child.kill('SIGTERM');
      const exit = await server.exited;
      const took = Date.now() - signalled;
      expect(exit.code).toBe(0);
      // not before drain 300 ms + deadline 1000 ms; the trickle never ends, so only the deadline can have cut it
      expect(took).toBeGreaterThanOrEqual(1300);
      const cut = exit.stdout.split('\n').find((line) => line.includes('"msg":"shutdown deadline: request cut"'));
      expect(JSON.parse(cut!)).toMatchObject({ level: 'warn', request_id: 'slow-at-deadline', method: 'POST', path: '/api/v1/agents', phase: 'receiving' });
      expect(exit.stdout).toContain('"cut":1,"msg":"stopped: requests cut at the deadline, database closed"');
      // nothing after its 100 Continue: cut unanswered
      expect((await slow.done).text).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    } finally {
      clearInterval(trickle);
    }
  });

  test('a second signal skips the rest of the drain delay', async () => {
    const server = await startServer({ PGLITE_DIR: 'memory', SHUTDOWN_DRAIN_DELAY_MS: '60000' });
    const signalled = Date.now();
    server.child.kill('SIGINT');
    await waitForOutput(server, /"msg":"shutting down: not ready any more/);
    server.child.kill('SIGINT');
    const exit = await server.exited;
    expect(exit.code).toBe(0);
    // the drain delay it was configured with was skipped
    expect(Date.now() - signalled).toBeLessThan(60_000);
    expect(exit.stdout).toContain('second signal: closing now');
  });
});
