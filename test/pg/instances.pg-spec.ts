import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import fc from 'fast-check';
import { createOrg, type TestOrg } from '../support/factories';
import { operationsOf, resolver, valueOf, type OpenApiDocument } from '../support/openapi-contract';
import { freePort } from '../../libs/net/free-port';
import { linesWithQueryText } from '../support/log-lines';
import { startServer, type ServerProcess } from '../support/server-process';
import { createTestApp, type TestApp } from '../support/test-app';

/**
 * Several instances of the built server on one PostgreSQL
 * server, as behind a load balancer. Each run uses a database of its own on
 * the suite's cluster, so "migrations apply once" starts from nothing.
 */
const ROOT = join(__dirname, '..', '..');
const JOURNAL = join(ROOT, 'src', 'database', 'migrations', 'meta', '_journal.json');
const NO_LIMITS = { agents: null, connectors: null, sources: null, chatbots: null, scheduled_triggers: null, custom_tool_slots: null };

async function startRedis(): Promise<{ url: string; stop(): void } | null> {
  const port = await freePort();
  let child: ChildProcess;
  try {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch {
    return null;
  }
  const ready = await new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(false));
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('Ready to accept connections') && resolve(true));
    setTimeout(() => resolve(false), 10_000);
  });
  if (!ready) {
    child.kill('SIGKILL');
    return null;
  }
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

/** every instance this file started, stopped and killed ones too: their output is checked at the end */
const launched: ServerProcess[] = [];
async function launch(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServer(env);
  launched.push(server);
  return server;
}

describe('several instances on one PostgreSQL server', () => {
  const adminUrl = process.env.DATABASE_URL!;
  const dbName = `instances_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  let instances: ServerProcess[] = [];
  let t: TestApp | undefined;
  let org: TestOrg;

  beforeAll(async () => {
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database "${dbName}"`);
    await admin.end();
    // both start at once against an empty database: each tries to migrate
    instances = await Promise.all([0, 1].map(() => launch({ DATABASE_URL: databaseUrl, TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' })));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await t?.close();
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
  });

  async function get(instance: ServerProcess, path: string, auth?: string) {
    const res = await fetch(instance.base + path, { headers: auth ? { authorization: auth } : {} });
    return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown>; error?: { code: string } } };
  }

  async function app(): Promise<TestApp> {
    t ??= await createTestApp({ databaseUrl });
    return t;
  }

  /**
   * The document's first POST collection that has a GET /{id} to read back,
   * with a body the service accepts and unique variants of it (fields with a
   * pattern, e.g. an agent's handle, get a suffix). Null when there is none.
   */
  async function creatableResource(writer: TestOrg) {
    const document = (await (await fetch(`${instances[0].base}/openapi.json`)).json()) as OpenApiDocument;
    const resolve = resolver(document);
    const create = operationsOf(document).find(
      (op) => op.method === 'POST' && op.body && !op.path.includes('{') && document.paths[`${op.path}/{id}`]?.get,
    );
    if (!create) return null;
    let template: Record<string, unknown> | null = null;
    for (const sample of fc.sample(valueOf(create.body!, resolve), { numRuns: 50, seed: 17 })) {
      const res = await fetch(instances[1].base + create.path, { method: 'POST', headers: { authorization: writer.auth, 'content-type': 'application/json' }, body: JSON.stringify(sample) });
      if (res.status === 201) {
        template = sample as Record<string, unknown>;
        break;
      }
    }
    if (!template) throw new Error(`no sample body was accepted by POST ${create.path}`);
    const properties = (resolve(create.body!).properties ?? {}) as Record<string, Record<string, unknown>>;
    const unique = Object.keys(properties).filter((k) => typeof resolve(properties[k]).pattern === 'string' && !resolve(properties[k]).enum);
    const variant = (n: number | string) => {
      const body: Record<string, unknown> = { ...template };
      for (const k of unique) if (typeof body[k] === 'string' && /^[a-zA-Z][a-zA-Z0-9]*$/.test(body[k] as string)) body[k] = `${(body[k] as string).slice(0, 20)}B${n}`;
      return body;
    };
    return { path: create.path, variant };
  }

  function post(instance: ServerProcess, path: string, auth: string, body: unknown, headers: Record<string, string> = {}) {
    return fetch(instance.base + path, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  }

  describe('migrations apply once when two instances start together', () => {
    it('records each migration exactly once and both instances serve', async () => {
      const journal = JSON.parse(readFileSync(JOURNAL, 'utf8')) as { entries: unknown[] };
      const client = new Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ hash: string }>('select hash from drizzle.__drizzle_migrations');
        expect(rows).toHaveLength(journal.entries.length);
        expect(new Set(rows.map((r) => r.hash)).size).toBe(rows.length);
      } finally {
        await client.end();
      }
      for (const instance of instances) {
        expect((await get(instance, '/')).status).toBe(200);
        expect(instance.output()).not.toMatch(/"level":"(error|fatal)"|failed to start/);
      }
    });
  });

  describe('a revoked key stops working on every instance within 5 seconds', () => {
    it('answers 401 on both instances within 5 s of revoked_at being set', async () => {
      org = await createOrg((await app()).app);
      const key = await org.key(['org:read']);
      // both instances have the key cached
      for (const instance of instances) expect((await get(instance, '/org', key.auth)).status).toBe(200);

      // as an operator would: the CLI is a process of its own, the servers learn of it from the database
      const result = spawnSync(process.execPath, [join(ROOT, 'dist', 'src', 'cli', 'cli.js'), 'keys', 'revoke', key.id], {
        env: { ...process.env, DATABASE_URL: databaseUrl },
        encoding: 'utf8',
      });
      if (result.status !== 0) throw new Error(`keys revoke exited ${result.status}: ${result.stderr}`);
      const revokedAt = Date.now();

      await Promise.all(
        instances.map(async (instance) => {
          for (;;) {
            // judged by when a request was sent, so a slow response on a loaded machine is no excuse either way
            const sentAfter = Date.now() - revokedAt;
            const res = await get(instance, '/org', key.auth);
            if (res.status === 401) {
              expect(res.body.error?.code).toBe('unauthorized');
              return;
            }
            expect(res.status).toBe(200);
            // a request sent more than 5 s after the revocation must not be served
            expect(sentAfter).toBeLessThanOrEqual(5_000);
            await new Promise((r) => setTimeout(r, 50));
          }
        }),
      );
      // API_KEY_CACHE_TTL_MS (≤ 5,000) bounds it, judged above on every request served; how soon after
      // the expiry the first refused one went out is the test machine's doing, not the service's
      // the organization's other key still works
      for (const instance of instances) expect((await get(instance, '/org', org.auth)).status).toBe(200);
    });
  });

  describe('SIGTERM during a burst of writes: every 2xx is in the database, none half-applied', () => {
    it('keeps every acknowledged write when one instance is stopped mid-burst', async () => {
      // no plan cap may cut the burst short
      const writer = await createOrg((await app()).app, { limits: NO_LIMITS });
      const resource = await creatableResource(writer);
      expect(resource).not.toBeNull(); // the document has POST collections with a GET /{id} (agents, custom tools, sources)
      const { path: createPath, variant } = resource!;
      for (const n of ['first', 'second']) expect((await post(instances[1], createPath, writer.auth, variant(n))).status).toBe(201);

      const victim = await launch({ DATABASE_URL: databaseUrl, TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' });
      const acknowledged: Array<{ id: string; data: Record<string, unknown> }> = [];
      let n = 0;
      let stopping: Promise<number | null> | null = null;
      const worker = async () => {
        while (n < 400) {
          const i = n++;
          if (i === 100) stopping = victim.stop();
          try {
            const res = await post(victim, createPath, writer.auth, variant(i));
            const body = (await res.json()) as { data?: Record<string, unknown> };
            expect(res.status).toBeLessThan(500);
            if (res.status >= 200 && res.status < 300) acknowledged.push({ id: String(body.data!.id), data: body.data! });
          } catch {
            // refused or reset after shutdown began: not acknowledged, so nothing is promised
          }
        }
      };
      await Promise.all(Array.from({ length: 10 }, worker));
      expect(await stopping).toBe(0);
      expect(acknowledged.length).toBeGreaterThan(0);
      for (const { id, data } of acknowledged) {
        const res = await get(instances[0], `${createPath}/${id}`, writer.auth);
        expect(res.status).toBe(200);
        expect(res.body.data).toEqual({ ...data, updated_at: res.body.data!.updated_at });
      }
      console.log(`SIGTERM burst: ${acknowledged.length} acknowledged writes of POST ${createPath}, all read back`);
    }, 120_000);
  });
  describe('the same Idempotency-Key sent to both instances executes once', () => {
    it('returns the first response from the other instance, and 409 for another body', async () => {
      const writer = await createOrg((await app()).app, { limits: NO_LIMITS });
      const resource = (await creatableResource(writer))!;
      expect(resource).not.toBeNull();
      const key = `instances-${Date.now()}`;
      const first = await post(instances[0], resource.path, writer.auth, resource.variant('idem'), { 'Idempotency-Key': key });
      expect(first.status).toBe(201);
      const firstBody = (await first.json()) as { data: { id: string } };
      const again = await post(instances[1], resource.path, writer.auth, resource.variant('idem'), { 'Idempotency-Key': key });
      expect(again.status).toBe(201);
      expect(((await again.json()) as { data: { id: string } }).data).toEqual(firstBody.data);
      const other = await post(instances[1], resource.path, writer.auth, resource.variant('other'), { 'Idempotency-Key': key });
      expect(other.status).toBe(409);
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_reused');
    });
  });

  describe('rate limits are shared by the instances (REDIS_URL)', () => {
    it('counts requests to both instances against one per-minute budget', async () => {
      const redis = await startRedis();
      if (!redis) {
        console.log('shared rate limits: skipped, redis-server is not installed (apt-get install redis-server)');
        return;
      }
      const limited: ServerProcess[] = [];
      try {
        const env = { DATABASE_URL: databaseUrl, REDIS_URL: redis.url, RATE_LIMIT_PER_MINUTE: '20', RATE_LIMIT_PER_HOUR: '1000', TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' };
        limited.push(...(await Promise.all([launch(env), launch(env)])));
        const caller = await createOrg((await app()).app);
        const statuses: number[][] = [[], []];
        for (const [i, instance] of limited.entries()) {
          for (let n = 0; n < 12; n++) {
            const res = await fetch(`${instance.base}/org`, { headers: { authorization: caller.auth } });
            statuses[i].push(res.status);
            if (res.status === 429) {
              expect(((await res.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
              expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
            } else await res.arrayBuffer();
          }
        }
        // 24 requests, 12 per instance, against one budget of 20: each alone would be under it
        expect(statuses[0].every((s) => s === 200)).toBe(true);
        expect(statuses.flat().filter((s) => s === 200)).toHaveLength(20);
        expect(statuses[1].filter((s) => s === 429)).toHaveLength(4);
      } finally {
        await Promise.all(limited.map((i) => i.stop()));
        redis.stop();
      }
    }, 60_000);
  });

  describe('scheduled purges run on every instance without conflict', () => {
    it('removes expired idempotency records and agents past the trash window once, with no failure logged', async () => {
      const owner = await createOrg((await app()).app);
      const client = new Client({ connectionString: databaseUrl });
      await client.connect();
      const agentIds = Array.from({ length: 50 }, (_, i) => `agent_${(0xa000000 + i).toString(16).padStart(24, '0')}`);
      try {
        await client.query(
          `insert into idempotency_records (org_id, key, fingerprint, status, body, expires_at)
           select $1, 'expired-' || g, 'f', 201, '{}'::json, now() - interval '1 hour' from generate_series(1, 200) g`,
          [owner.orgId],
        );
        await client.query(
          `insert into agents (id, org_id, handle, name, deleted_at)
           select id, $1, 'trashed' || ord, 'Trashed', now() - interval '40 days' from unnest($2::text[]) with ordinality as t(id, ord)`,
          [owner.orgId, agentIds],
        );
        const env = { DATABASE_URL: databaseUrl, TRASH_PURGE_CRON: '* * * * * *', IDEMPOTENCY_PURGE_CRON: '* * * * * *' };
        const purgers = await Promise.all([launch(env), launch(env)]);
        try {
          const deadline = Date.now() + 15_000;
          let left = { records: -1, agents: -1 };
          while (Date.now() < deadline) {
            const records = Number((await client.query('select count(*) from idempotency_records where org_id = $1', [owner.orgId])).rows[0].count);
            const agents = Number((await client.query('select count(*) from agents where org_id = $1', [owner.orgId])).rows[0].count);
            left = { records, agents };
            if (records === 0 && agents === 0) break;
            await new Promise((r) => setTimeout(r, 250));
          }
          expect(left).toEqual({ records: 0, agents: 0 });
          // let a few more ticks run on both, then: no instance logged a failure or a conflict
          await new Promise((r) => setTimeout(r, 2_000));
          for (const purger of purgers) expect(purger.output()).not.toMatch(/"level":"(warn|error|fatal)"/);
        } finally {
          await Promise.all(purgers.map((i) => i.stop()));
        }
      } finally {
        await client.end();
      }
    }, 60_000);
  });

  it('no log line of any instance (SIGTERMed, SIGKILLed or stopped) carries a query\'s text or parameters', () => {
    expect(launched.length).toBeGreaterThan(0);
    expect(linesWithQueryText([...launched.map((server) => server.output()), ...(t?.logs ?? [])])).toEqual([]);
  });
});
