import { setPriority } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createOrg, type TestOrg } from '../support/factories';
import { startServer, type ServerProcess } from '../support/server-process';
import { describeWithRedis, startRedisFromPath, type TestRedis } from '../support/redis-server';
import { createTestApp, type TestApp } from '../support/test-app';
import { linesWithQueryText } from '../support/log-lines';

/**
 * One key's budget is shared by every instance, exactly, on a saturated
 * host. Eight instances on one database and one Redis, each with a busy
 * event loop (test/support/cpu-hog.cjs, started once all are up, blocks it 40 ms at a time: longer than
 * the 25 ms a request waits for Redis, so the wait's timer is always due
 * before the reply that arrived meanwhile is read), under a mixed load of
 * reads and writes from several organizations, while one key sends twice its
 * budget round-robin across the instances. Exactly its budget is answered
 * 2xx, whatever the machine's load: no time is asserted. The budget is the
 * hour window, so no window ends during the run.
 *
 * The instances run at a lower CPU priority than Redis and this process:
 * the CPU is saturated by the instances' own loops, and the proof is about
 * their busy event loops, not about a Redis starved of CPU (which answering
 * nothing for 25 ms would rightly be decided without).
 */
const INSTANCES = 8;
const LIMIT = 120;
const NO_LIMITS = { agents: null, connectors: null, sources: null, chatbots: null, scheduled_triggers: null, custom_tool_slots: null };

describeWithRedis('the shared rate limit under CPU saturation')('one key across eight instances with busy event loops', () => {
  const adminUrl = process.env.DATABASE_URL!;
  const dbName = `ratelimit_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  let redis: TestRedis;
  let t: TestApp;
  const instances: ServerProcess[] = [];

  beforeAll(async () => {
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database "${dbName}"`);
    await admin.end();
    redis = await startRedisFromPath();
    // migrated once, by the in-process app that also makes the organizations
    t = await createTestApp({ databaseUrl });
    const env = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      // the key under test is on the "metered" plan; the mixed load's organizations are never limited
      RATE_LIMIT_PLANS: `metered:${LIMIT}/${LIMIT}`,
      RATE_LIMIT_PER_MINUTE: '1000000',
      RATE_LIMIT_PER_HOUR: '100000000',
      DB_POOL_MAX: '3',
      TRASH_PURGE_CRON: 'off',
      IDEMPOTENCY_PURGE_CRON: 'off',
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: `--require ${join(__dirname, '..', 'support', 'cpu-hog.cjs')}`,
    };
    // two at a time: eight starting together on a loaded machine can take longer than a start may
    for (let i = 0; i < INSTANCES; i += 2) instances.push(...(await Promise.all([startServer(env), startServer(env)])));
    for (const instance of instances) {
      setPriority(instance.child.pid!, 10);
      // the busy loops start now that every instance is up
      instance.child.kill('SIGUSR2');
    }
  }, 600_000);

  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await t?.close();
    await redis?.stop();
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
  });

  it(`allows exactly ${LIMIT} requests of one key, and never shows more left than the shared count`, async () => {
    const metered = await createOrg(t.app, { plan: 'metered' });
    const others: TestOrg[] = await Promise.all(Array.from({ length: 4 }, () => createOrg(t.app, { limits: NO_LIMITS })));

    const keyed: Array<{ status: number; remaining: number }> = [];
    let sent = 0;
    const keyWorker = async () => {
      while (sent < 2 * LIMIT) {
        const instance = instances[sent++ % INSTANCES];
        const res = await fetch(`${instance.base}/org`, { headers: { authorization: metered.auth } });
        await res.arrayBuffer();
        keyed.push({ status: res.status, remaining: Number(res.headers.get('x-ratelimit-remaining')) });
      }
    };
    let mixedDone = false;
    const mixedStatuses: number[] = [];
    const mixedWorker = async (w: number) => {
      for (let n = 0; !mixedDone; n++) {
        const org = others[(w + n) % others.length];
        const instance = instances[(w * 3 + n) % INSTANCES];
        const write = n % 3 === 0;
        const res = write
          ? await fetch(`${instance.base}/agents`, {
              method: 'POST',
              headers: { authorization: org.auth, 'content-type': 'application/json' },
              body: JSON.stringify({ handle: `m${w}x${n}`, name: `Mixed ${w}-${n}`, instructions: 'Help.' }),
            })
          : await fetch(`${instance.base}/agents?limit=20`, { headers: { authorization: org.auth } });
        await res.arrayBuffer();
        mixedStatuses.push(res.status);
      }
    };
    const mixed = Array.from({ length: 12 }, (_, w) => mixedWorker(w));
    await Promise.all(Array.from({ length: 16 }, keyWorker));
    mixedDone = true;
    await Promise.all(mixed);

    const allowed = keyed.filter((r) => r.status === 200);
    expect(keyed).toHaveLength(2 * LIMIT);
    expect(keyed.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
    expect(allowed).toHaveLength(LIMIT);
    expect(keyed.filter((r) => r.status === 429).every((r) => r.remaining === 0)).toBe(true);
    // the mixed load really ran, and was served
    expect(mixedStatuses.length).toBeGreaterThan(0);
    expect(mixedStatuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    console.log(`shared rate limit: ${allowed.length} of ${keyed.length} allowed for one key of budget ${LIMIT}, beside ${mixedStatuses.length} mixed requests, ${INSTANCES} busy instances`);
  }, 170_000);

  it('no log line the instances produced carries a query\'s text or parameters', () => {
    const output = instances.map((instance) => instance.output());
    expect(linesWithQueryText(output)).toEqual([]);
  });
});
