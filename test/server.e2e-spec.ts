import { existsSync, writeFileSync } from 'node:fs';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DEMO_ORG_ID } from '../src/seed/demo-fixture';
import { baseEnv, ensureBuilt, run, SERVER_JS, startServer, tempDir, waitForOutput, type RunningServer } from './support/processes';

/**
 * The built server (dist/src/main.js) as an operator runs it: a real process,
 * a real port, a PGlite directory on disk.
 */
jest.setTimeout(180_000);

beforeAll(() => ensureBuilt());

const dir = tempDir('server');
const pgliteDir = join(dir, 'pglite');
let first: RunningServer | null = null;
/** [line, token, url] of the first run's curl line */
let curl: RegExpExecArray;

afterAll(async () => {
  if (first && first.child.exitCode === null) await first.stop('SIGKILL');
});

async function getJson(url: string, token?: string): Promise<{ status: number; body: any; requestId: string | null }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: await res.json(), requestId: res.headers.get('x-request-id') };
}

describe('first run: embedded default + empty database → demo organization and a ready-to-paste curl line', () => {
  test('the process logs one line naming its address and prints the curl line once', async () => {
    // a drain delay no loaded machine reaches while the test checks the drain; the test ends it with a second signal
    first = await startServer({ PGLITE_DIR: pgliteDir, SHUTDOWN_DRAIN_DELAY_MS: '120000' });
    expect(first.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const listening = first
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"msg":"listening on'));
    expect(listening).toHaveLength(1);
    // the runtime it runs on, for an operator reading the log (the pinned one: test/runtime.e2e-spec.ts)
    expect(JSON.parse(listening[0])).toMatchObject({ node: process.version });
    await waitForOutput(first, /^curl .*\n/m, 10_000, 'stderr');
    const curls = first.stderr().split('\n').filter((line) => line.startsWith('curl '));
    expect(curls).toHaveLength(1);
    curl = /^curl -H "Authorization: Bearer (svc_live_[A-Za-z0-9_-]{32,})" (http:\/\/\S+)$/.exec(curls[0])!;
    expect(curl).not.toBeNull();
    expect(curl[2]).toBe(`${first.address}/org`);
    // the token is shown once as plain text on stderr; stdout is the JSON log
    // stream alone (every line a record, for shippers and jq) and never holds it
    const stdoutLines = first.stdout().split('\n').filter((line) => line !== '');
    expect(stdoutLines.length).toBeGreaterThan(0);
    for (const line of stdoutLines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    expect(first.stdout()).not.toContain(curl[1]);
    expect(first.stderr().split(curl[1]).length - 1).toBe(1);
  });

  test("the curl line's request works: the demo organization, its members, every scope", async () => {
    const org = await getJson(curl[2], curl[1]);
    expect(org.status).toBe(200);
    expect(org.body.data.id).toBe(DEMO_ORG_ID);
    expect(org.body.meta.request_id).toBe(org.requestId);
    const team = await getJson(`${first!.address}/team`, curl[1]);
    expect(team.status).toBe(200);
    expect(team.body.data.length).toBeGreaterThan(0);
    const banner = await getJson(`${first!.address}/`);
    expect(banner.body.data.version).toBe('v1');
  });

  test('a second process on the same PGLITE_DIR refuses to start with a one-line reason', async () => {
    const second = await run(SERVER_JS, [], baseEnv({ PGLITE_DIR: pgliteDir, PORT: '0', HOST: '127.0.0.1' }));
    expect(second.code).not.toBe(0);
    const lines = second.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`in use by process ${first!.child.pid}`));
    // and the first one is unharmed
    expect((await getJson(curl[2], curl[1])).status).toBe(200);
  });

  test('SIGTERM: not ready at once, still serving for the drain delay; then the in-flight request finishes with Connection: close, exit 0', async () => {
    const { hostname, port } = new URL(first!.address);
    const origin = `http://${hostname}:${port}`;
    const socket = connect(Number(port), hostname);
    let received = '';
    let continued: () => void;
    const serverHasTheRequest = new Promise<void>((resolve) => (continued = resolve));
    const response = new Promise<string>((resolve, reject) => {
      socket.on('data', (chunk) => {
        received += chunk;
        if (/^HTTP\/1\.1 100 /.test(received)) continued();
      });
      socket.on('end', () => resolve(received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')));
      socket.on('error', reject);
    });
    const body = JSON.stringify({ slow: 'x'.repeat(64) });
    // headers and half of the body: a keep-alive request the server has received and is reading
    // (its 100 Continue says the server took the request in, before the signal is sent); with a
    // valid key, since only such a request has its body read
    socket.write(
      `POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${curl[1]}\r\nX-Request-ID: in-flight-at-sigterm\r\nExpect: 100-continue\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await serverHasTheRequest;
    socket.write(body.slice(0, 20));
    expect((await fetch(`${origin}/readyz`)).status).toBe(200);
    first!.child.kill('SIGTERM');
    // the server's own account: the request was in flight when the signal came
    const signalled = await waitForOutput(first!, /^.*"msg":"shutting down: not ready any more.*$/m);
    const atSignal = JSON.parse(signalled[0]) as { in_flight: number; requests: Array<Record<string, string>>; drain_delay_ms: number };
    expect(atSignal.drain_delay_ms).toBe(120000);
    expect(atSignal.requests).toContainEqual({ request_id: 'in-flight-at-sigterm', method: 'POST', path: '/api/v1/agents', phase: 'receiving' });
    // drain: /readyz says 503 naming it, everything else is served as before (new connections too)
    const ready = await fetch(`${origin}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { error: { details: { failing: string[] } } }).error.details.failing).toEqual(['draining']);
    const banner = await fetch(`${origin}/api/v1/`);
    expect(banner.status).toBe(200);
    expect(first!.stdout()).not.toContain('port closed');
    // then the port closes (at once on a second signal: the drain's own end is the shutdown deadline test's in
    // server-limits); the in-flight request is still awaited
    first!.child.kill('SIGTERM');
    await waitForOutput(first!, /"msg":"shutting down: port closed/);
    expect(first!.child.exitCode).toBeNull();
    await expect(fetch(`${origin}/healthz`)).rejects.toThrow();
    socket.end(body.slice(20));
    const text = await response;
    expect(text).toMatch(/^HTTP\/1\.1 422 /); // not an agent: a complete, enveloped answer
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(text).toContain('"code":"validation_failed"');
    const exit = await first!.exited;
    expect(exit.code).toBe(0);
    expect(exit.stdout).toContain('database closed');
    // the in-flight request's own log line is out before the exit, with the path as received
    const requestLine = exit.stdout.split('\n').find((line) => line.includes('"msg":"request"') && line.includes('"request_id":"in-flight-at-sigterm"'));
    expect(requestLine).toContain('"status":422');
    expect(requestLine).toContain('"path":"/api/v1/agents"');
    expect(exit.stdout).not.toContain('request cut');
    expect(existsSync(`${pgliteDir}.lock`)).toBe(false); // released by the database close
  });
});

describe('restart on the same directory: data kept, no demo, SEED_FILE loaded before the port opens', () => {
  test('seed keys work on the very first request; generated ones are printed once', async () => {
    const token = `svc_live_${'s'.repeat(40)}`;
    const seed = join(dir, 'seed.json');
    writeFileSync(
      seed,
      JSON.stringify({
        orgs: [
          {
            id: 'org_6500000000000000000000aa',
            name: 'Seeded',
            slug: 'seeded',
            api_keys: [
              { id: 'key_6500000000000000000000aa', token, scopes: ['org:read'] },
              { id: 'key_6500000000000000000000ab', label: 'generated', scopes: ['team:read'] },
            ],
          },
        ],
      }),
    );
    const server = await startServer({ PGLITE_DIR: pgliteDir, SEED_FILE: seed });
    try {
      expect(server.stderr()).not.toMatch(/^curl /m); // not empty any more: no demo
      const seeded = await getJson(`${server.address}/org`, token);
      expect(seeded.status).toBe(200);
      expect(seeded.body.data.id).toBe('org_6500000000000000000000aa');
      const generated = await waitForOutput(server, /generated key key_6500000000000000000000ab "generated" for org_6500000000000000000000aa \(shown once\): (svc_live_\S+)/, 10_000, 'stderr');
      expect((await getJson(`${server.address}/team`, generated![1])).status).toBe(200);
      // the demo organization and its key survived the restart
      const demo = await getJson(`${server.address}/org`, curl[1]);
      expect(demo.body.data.id).toBe(DEMO_ORG_ID);
    } finally {
      expect((await server.stop()).code).toBe(0);
    }
  });
});

describe('a bad setting stops start-up with exit ≠ 0 and a one-line reason', () => {
  const memory = { PGLITE_DIR: 'memory' };
  test.each([
    ['PORT=abc', { PORT: 'abc' }, /PORT must be an integer/],
    ['PORT=70000', { PORT: '70000' }, /PORT must be between 0 and 65535/],
    ['LOG_LEVEL=loud', { LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
    ['DATABASE_URL=mysql://…', { DATABASE_URL: 'mysql://u:p@localhost/db' }, /DATABASE_URL must start with postgres:\/\//],
    ['DATABASE_URL without CURSOR_SECRET and ENCRYPTION_KEY', { DATABASE_URL: 'postgres://u:p@127.0.0.1:1/db' }, /CURSOR_SECRET and ENCRYPTION_KEY must be set/],
    ['ENCRYPTION_KEY not 32 bytes', { ENCRYPTION_KEY: 'abc' }, /ENCRYPTION_KEY must be 32 bytes/],
    ['API_KEY_CACHE_TTL_MS above 5 s', { API_KEY_CACHE_TTL_MS: '60000' }, /API_KEY_CACHE_TTL_MS must be between 0 and 5000/],
    ['SEED_FILE missing', { SEED_FILE: '/nonexistent/seed.json' }, /SEED_FILE \/nonexistent\/seed.json does not exist/],
    ['HTTP_HEADERS_TIMEOUT_MS above HTTP_REQUEST_TIMEOUT_MS', { HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_HEADERS_TIMEOUT_MS: '3000' }, /HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS/],
    ['SHUTDOWN_DRAIN_DELAY_MS not a number', { SHUTDOWN_DRAIN_DELAY_MS: '5s' }, /SHUTDOWN_DRAIN_DELAY_MS must be an integer/],
  ])('%s', async (_name, env, reason) => {
    const exit = await run(SERVER_JS, [], baseEnv({ ...memory, PORT: '0', ...env }));
    expect(exit.code).toBe(1);
    const lines = exit.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(reason);
    // a secret in the setting is not echoed back
    expect(exit.stderr).not.toContain('u:p@');
  });

  test('a port in use fails before the first-run demo is loaded, so the next start still prints its key', async () => {
    const busyDir = join(dir, 'busy-port-db');
    const blocker = createNetServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const busy = (blocker.address() as AddressInfo).port;
    try {
      const exit = await run(SERVER_JS, [], baseEnv({ PGLITE_DIR: busyDir, PORT: String(busy), HOST: '127.0.0.1' }));
      expect(exit.code).toBe(1);
      expect(exit.stderr.trim().split('\n')).toEqual([expect.stringMatching(/EADDRINUSE/)]);
      expect(exit.stderr).not.toMatch(/^curl /m);
    } finally {
      blocker.close();
    }
    // the database is still empty: this first successful start is the first run, with its curl line
    const retry = await startServer({ PGLITE_DIR: busyDir });
    try {
      await waitForOutput(retry, /^curl .*\n/m, 10_000, 'stderr');
    } finally {
      await retry.stop('SIGTERM');
    }
  });

  test('an invalid SEED_FILE names the first bad path and leaves nothing behind', async () => {
    const seed = join(dir, 'bad-seed.json');
    writeFileSync(seed, JSON.stringify({ orgs: [{ name: 'Ok' }, { name: 'Bad', members: [{ email: 'nope', role: 'owner' }] }] }));
    const exit = await run(SERVER_JS, [], baseEnv({ PGLITE_DIR: join(dir, 'bad-seed-db'), PORT: '0', SEED_FILE: seed }));
    expect(exit).toMatchObject({ code: 1, signal: null });
    expect(exit.stderr.trim().split('\n')).toEqual([expect.stringMatching(/invalid fixture: orgs\[1\]\.members\[0\]\.email: /)]);
    expect(existsSync(join(dir, 'bad-seed-db.lock'))).toBe(false);
  });
});
