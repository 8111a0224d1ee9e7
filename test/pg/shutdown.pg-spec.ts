import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import { tempDir } from '../support/processes';
import { linesWithQueryText } from '../support/log-lines';
import { startServer, type ServerProcess } from '../support/server-process';

/**
 * Shutdown with a request the server is working on.
 * The request is held in the database by a lock the test owns, so that it is
 * in flight when the signal comes — proven from the server's side
 * (pg_stat_activity shows its query waiting; the server's log lists it) —
 * and the test decides whether it finishes before the deadline or not.
 */
jest.setTimeout(120_000);

const adminUrl = process.env.DATABASE_URL!;
const dbName = `shutdown_${process.pid}_${Date.now().toString(36)}`;
const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${dbName}` }).toString();
const TOKENS = [`svc_live_${'a'.repeat(40)}`, `svc_live_${'b'.repeat(40)}`];
let seedFile: string;

beforeAll(async () => {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database "${dbName}"`);
  await admin.end();
  seedFile = join(tempDir('shutdown'), 'seed.json');
  writeFileSync(
    seedFile,
    JSON.stringify({
      orgs: [
        {
          id: 'org_6600000000000000000000aa',
          name: 'Shutdown',
          slug: 'shutdown',
          api_keys: TOKENS.map((token, i) => ({ id: `key_66000000000000000000000${i}`, token, scopes: ['org:read'] })),
        },
      ],
    }),
  );
});

afterAll(async () => {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
});

/** every server this file started: their output is checked at the end */
const launched: ServerProcess[] = [];

async function start(env: Record<string, string>): Promise<ServerProcess> {
  // the held request must wait on the lock, not time out at the default 5 s
  const server = await startServer({ DATABASE_URL: databaseUrl, SEED_FILE: seedFile, DB_STATEMENT_TIMEOUT_MS: '60000', TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off', ...env });
  launched.push(server);
  return server;
}

/**
 * Takes the lock that holds every read of the organization (the handler of
 * GET /org), on a connection of the test's own. The key was checked before
 * (warmKey): a lookup of it would wait on the same lock, before the handler,
 * where cutting it changes nothing.
 */
async function holdOrgReads(): Promise<Client> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('begin');
  await client.query('lock table orgs in access exclusive mode');
  return client;
}

/** Until the server's query is seen waiting on the lock in the database. */
async function waitUntilBlocked(observer: Client): Promise<void> {
  for (let i = 0; i < 200; i++) {
    // inside a transaction the statistics views are a snapshot: take a fresh one
    await observer.query('select pg_stat_clear_snapshot()');
    const { rows } = await observer.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock' and query ilike '%"orgs"%'`,
      [dbName],
    );
    if (rows[0].n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the request never reached the database');
}

/** The key checked once, so the next requests with it are served from memory (API_KEY_CACHE_TTL_MS, 5 s). */
async function warmKey(server: ServerProcess, token: string): Promise<void> {
  expect((await fetch(`${server.base}/org`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
}

/** GET /org with a key already checked, on a raw keep-alive connection: resolves with what the server sent. */
function heldRequest(server: ServerProcess, token: string, requestId: string): Promise<string> {
  const { hostname, port } = new URL(server.base);
  const socket = connect(Number(port), hostname);
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
    socket.write(`GET /api/v1/org HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Request-ID: ${requestId}\r\n\r\n`);
  });
}

function logLine(output: string, msg: string): Record<string, unknown> | undefined {
  const line = output.split('\n').find((l) => l.includes(`"msg":"${msg}`));
  return line ? (JSON.parse(line) as Record<string, unknown>) : undefined;
}

async function waitForLog(server: ServerProcess, msg: string, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = logLine(server.output(), msg);
    if (found) return found;
    if (Date.now() > until) throw new Error(`no "${msg}" in:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('a request the server is working on at SIGTERM: draining, then the port closes, it finishes with Connection: close, exit 0', async () => {
  // a drain delay no loaded machine reaches while the test checks the drain; a second signal ends it (the drain's
  // own end is the shutdown deadline test's in test/server-limits.e2e-spec.ts)
  const server = await start({ SHUTDOWN_DRAIN_DELAY_MS: '100000', SHUTDOWN_TIMEOUT_MS: '20000' });
  await warmKey(server, TOKENS[0]);
  const lock = await holdOrgReads();
  try {
    const answer = heldRequest(server, TOKENS[0], 'held-then-released');
    await waitUntilBlocked(lock);
    server.child.kill('SIGTERM');
    const atSignal = await waitForLog(server, 'shutting down: not ready any more');
    expect(atSignal.requests).toContainEqual({ request_id: 'held-then-released', method: 'GET', path: '/api/v1/org', phase: 'handling' });
    // draining: not ready, still serving
    const ready = await fetch(`${new URL(server.base).origin}/readyz`);
    expect(ready.status).toBe(503);
    expect((await fetch(`${server.base}/`)).status).toBe(200);
    expect(server.output()).not.toContain('port closed');
    server.child.kill('SIGTERM');
    await waitForLog(server, 'shutting down: port closed');
    expect(server.child.exitCode).toBeNull();
    await lock.query('commit');
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(await server.stop()).toBe(0);
    expect(server.output()).toContain('stopped: in-flight requests finished, database closed');
    expect(server.output()).not.toContain('request cut');
  } finally {
    await lock.end().catch(() => undefined);
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  }
});

test('a request still held at the hard deadline is cut and named; its outcome is unknown to the client: exit 1, on time', async () => {
  const server = await start({ SHUTDOWN_DRAIN_DELAY_MS: '200', SHUTDOWN_TIMEOUT_MS: '1500' });
  await warmKey(server, TOKENS[1]);
  const lock = await holdOrgReads();
  try {
    const answer = heldRequest(server, TOKENS[1], 'held-past-deadline');
    await waitUntilBlocked(lock);
    // the lock is never released while the server runs: only the deadline can end the held request
    const code = await server.stop();
    expect(code).toBe(1);
    expect(await answer).toBe(''); // cut: no partial answer
    expect(logLine(server.output(), 'shutdown deadline: request cut')).toMatchObject({
      level: 'error',
      request_id: 'held-past-deadline',
      method: 'GET',
      path: '/api/v1/org',
      phase: 'handling',
    });
  } finally {
    await lock.end().catch(() => undefined);
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  }
});

test('no log line of a draining or cut server carries a query\'s text or parameters', () => {
  expect(launched.length).toBeGreaterThan(0);
  expect(linesWithQueryText(launched.map((server) => server.output()))).toEqual([]);
});
