import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import fc from 'fast-check';
import { createOrg, type TestOrg } from '../support/factories';
import { operationsOf, resolver, valueOf, type OpenApiDocument } from '../support/openapi-contract';
import { startServer, type ServerProcess } from '../support/server-process';
import { createTestApp, type TestApp } from '../support/test-app';

/**
 * issue 7 §2/§3: several instances of the built server on one PostgreSQL
 * server, as behind a load balancer. Each run uses a database of its own on
 * the suite's cluster, so "migrations apply once" starts from nothing.
 */
const JOURNAL = join(__dirname, '..', '..', 'src', 'database', 'migrations', 'meta', '_journal.json');

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
    instances = await Promise.all([0, 1].map(() => startServer({ DATABASE_URL: databaseUrl, TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' })));
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

      const client = new Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query('update api_keys set revoked_at = now() where id = $1', [key.id]);
      await client.end();
      const revokedAt = Date.now();

      const bitAfter = await Promise.all(
        instances.map(async (instance) => {
          for (;;) {
            const res = await get(instance, '/org', key.auth);
            if (res.status === 401) {
              expect(res.body.error?.code).toBe('unauthorized');
              return Date.now() - revokedAt;
            }
            expect(res.status).toBe(200);
            if (Date.now() - revokedAt > 10_000) return Number.POSITIVE_INFINITY;
            await new Promise((r) => setTimeout(r, 50));
          }
        }),
      );
      // API_KEY_CACHE_TTL_MS (≤ 5,000) bounds it; 100 ms for the polling and the request itself
      for (const ms of bitAfter) expect(ms).toBeLessThanOrEqual(5_100);
      // the organization's other key still works
      for (const instance of instances) expect((await get(instance, '/org', org.auth)).status).toBe(200);
    }, 30_000);
  });

  describe('SIGTERM during a burst of writes: every 2xx is in the database, none half-applied', () => {
    it('keeps every acknowledged write when one instance is stopped mid-burst', async () => {
      const document = (await (await fetch(`${instances[0].base}/openapi.json`)).json()) as OpenApiDocument;
      const resolve = resolver(document);
      const create = operationsOf(document).find(
        (op) => op.method === 'POST' && op.body && !op.path.includes('{') && document.paths[`${op.path}/{id}`]?.get,
      );
      if (!create) {
        console.log('SIGTERM burst: skipped, the document has no POST collection with a GET /{id} to read writes back (none on this build)');
        return;
      }
      // no plan cap may cut the burst short
      const writer = await createOrg((await app()).app, {
        limits: { agents: null, connectors: null, sources: null, chatbots: null, scheduled_triggers: null, custom_tool_slots: null },
      });
      // a body the service accepts, then unique variants of it
      let template: Record<string, unknown> | null = null;
      for (const sample of fc.sample(valueOf(create.body!, resolve), { numRuns: 50, seed: 17 })) {
        const res = await fetch(instances[1].base + create.path, { method: 'POST', headers: { authorization: writer.auth, 'content-type': 'application/json' }, body: JSON.stringify(sample) });
        if (res.status === 201) {
          template = sample as Record<string, unknown>;
          break;
        }
      }
      if (!template) throw new Error(`no sample body was accepted by POST ${create.path}`);
      // unique values for the fields with a pattern (e.g. an agent's handle), so no write conflicts
      const properties = (resolve(create.body!).properties ?? {}) as Record<string, Record<string, unknown>>;
      const unique = Object.keys(properties).filter((k) => typeof resolve(properties[k]).pattern === 'string' && !resolve(properties[k]).enum);
      const variant = (n: number) => {
        const body: Record<string, unknown> = { ...template };
        for (const k of unique) if (typeof body[k] === 'string' && /^[a-zA-Z][a-zA-Z0-9]*$/.test(body[k] as string)) body[k] = `${(body[k] as string).slice(0, 20)}B${n}`;
        return body;
      };
      for (const n of [-1, -2]) {
        const res = await fetch(instances[1].base + create.path, { method: 'POST', headers: { authorization: writer.auth, 'content-type': 'application/json' }, body: JSON.stringify(variant(n)) });
        expect(res.status).toBe(201);
      }

      const victim = await startServer({ DATABASE_URL: databaseUrl, TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' });
      const acknowledged: Array<{ id: string; data: Record<string, unknown> }> = [];
      let n = 0;
      let stopping: Promise<number | null> | null = null;
      const worker = async () => {
        while (n < 400) {
          const i = n++;
          if (i === 100) stopping = victim.stop();
          try {
            const res = await fetch(victim.base + create.path, {
              method: 'POST',
              headers: { authorization: writer.auth, 'content-type': 'application/json' },
              body: JSON.stringify(variant(i)),
            });
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
        const res = await get(instances[0], `${create.path}/${id}`, writer.auth);
        expect(res.status).toBe(200);
        expect(res.body.data).toEqual({ ...data, updated_at: res.body.data!.updated_at });
      }
      console.log(`SIGTERM burst: ${acknowledged.length} acknowledged writes of POST ${create.path}, all read back`);
    }, 120_000);
  });
});
