import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { DEFAULT_RATE_LIMIT_REDIS_WAIT_MS } from '../src/config/config';
import { createOrg } from './support/factories';
import { sampleValue, scrapeMetrics, type Exposition } from './support/prometheus';
import { describeWithRedis, startRedisFromPath, type TestRedis } from './support/redis-server';
import { createTestApp, type TestApp } from './support/test-app';
import { linesWithQueryText } from './support/log-lines';

/**
 * Redis trouble costs a request at most one command budget, from the first
 * request on. A frozen Redis (SIGSTOP: the connection stays open, nothing
 * answers) must not add more than 50 ms to any request, those already
 * waiting when it froze included; once it answers again, counting is
 * shared again.
 *
 * How the bound is asserted without trusting wall-clock time on a loaded
 * machine: the budget is the setting's default (asserted ≤ 50 ms), and each
 * request's wait for its count is measured by the service itself
 * (`rate_limit_store_wait_seconds`): every wait of the frozen phase must be
 * within 250 ms (the budget, plus the scheduling delay a loaded machine adds
 * to any timer; half of the 500 ms the old code waited), and some must have lasted more
 * than 10 ms (so the requests really met the frozen Redis). No wall-clock
 * latency is asserted: load breaks it, and the bench measures latency.
 */

const WAIT = 'rate_limit_store_wait_seconds';

/** Waits observed between two scrapes: how many, and how many within `le` seconds. */
function waitsBetween(before: Exposition, after: Exposition, le: string): { count: number; within: number } {
  const delta = (name: string, labels: Record<string, string> = {}) => sampleValue(after, name, labels) - sampleValue(before, name, labels);
  return { count: delta(`${WAIT}_count`), within: delta(`${WAIT}_bucket`, { le }) };
}

describeWithRedis('Redis fault tests')('a frozen Redis (SIGSTOP)', () => {
  let redis: TestRedis;
  let t: TestApp;
  let base: string;
  let auth: string;
  let keyId: string;

  beforeAll(async () => {
    redis = await startRedisFromPath();
    t = await createTestApp({ redisUrl: redis.url, rateLimitPerMinute: 100_000, rateLimitPerHour: 1_000_000, rateLimitPlans: {}, metricsPort: 0, host: '127.0.0.1' });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/api/v1`;
    const org = await createOrg(t.app);
    auth = org.auth;
    keyId = org.keyId;
  });

  afterAll(async () => {
    try {
      process.kill(redis.pid, 'SIGCONT');
    } catch {
      /* already gone */
    }
    await t?.close();
    await redis?.stop();
  });

  async function getOrg(): Promise<{ status: number }> {
    const res = await fetch(`${base}/org`, { headers: { authorization: auth } });
    await res.arrayBuffer();
    return { status: res.status };
  }

  async function sharedCount(): Promise<number> {
    const client = new Redis(redis.url);
    try {
      const keys = (await client.keys('rl:*')).filter((k) => k.includes(keyId) && k.includes(':minute:'));
      return keys.length === 0 ? 0 : Number(await client.get(keys[0]));
    } finally {
      client.disconnect();
    }
  }

  it('adds at most RATE_LIMIT_REDIS_WAIT_MS (≤ 50 ms) to any request from the first on; shared counting resumes when it answers', async () => {
    expect(t.config.rateLimitRedisWaitMs).toBe(DEFAULT_RATE_LIMIT_REDIS_WAIT_MS);
    expect(DEFAULT_RATE_LIMIT_REDIS_WAIT_MS).toBeLessThanOrEqual(50);
    for (let i = 0; i < 20; i++) expect((await getOrg()).status).toBe(200);
    for (let i = 0; i < 30; i++) expect((await getOrg()).status).toBe(200);
    const counted = await sharedCount();
    expect(counted).toBe(50);
    expect(sampleValue(await scrapeMetrics(t.app), 'rate_limit_redis_fallback_active')).toBe(0);

    const beforeFreeze = await scrapeMetrics(t.app);
    process.kill(redis.pid, 'SIGSTOP');
    try {
      // the first requests after the freeze, at once: each meets the frozen Redis before the breaker opens
      const first = await Promise.all(Array.from({ length: 8 }, () => getOrg()));
      expect(first.map((r) => r.status)).toEqual(Array(8).fill(200));
      let frozen = first.length;
      const started = performance.now();
      // for longer than several probe intervals (the probes must not stall requests either), and
      // at least 20 requests more however slow a loaded machine makes each one
      while (performance.now() - started < 3_000 || frozen <= 20) {
        const sample = await getOrg();
        expect(sample.status).toBe(200);
        frozen += 1;
      }
      // a keyed write is counted in memory too, and runs once
      const key = randomUUID();
      const write = () =>
        fetch(`${base}/agents`, {
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ handle: `frozen${key.slice(0, 8)}`, name: 'Frozen Redis', instructions: 'Help.' }),
        });
      const created = await write();
      expect(created.status).toBe(201);
      const retried = await write();
      expect(retried.status).toBe(201);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(((await retried.json()) as { data: { id: string } }).data.id).toBe(((await created.json()) as { data: { id: string } }).data.id);
      const afterFreeze = await scrapeMetrics(t.app);
      expect(sampleValue(afterFreeze, 'rate_limit_redis_fallback_active')).toBe(1);
      // readiness: the API serves on, so a balancer must not take the instance out; degraded, in the body and the metric
      const ready = await fetch(`${new URL(base).origin}/readyz`);
      const readiness = (await ready.json()) as { data: { status: string; degraded: string[]; checks: Record<string, string> } };
      expect(ready.status).toBe(200);
      expect(readiness.data).toMatchObject({ status: 'ready', degraded: ['redis'], checks: { database: 'ok', migrations: 'ok' } });
      expect(sampleValue(await scrapeMetrics(t.app), 'readiness_degraded', { check: 'redis' })).toBe(1);

      // every request's wait for its count, as the service measured it: the 25 ms budget, plus what a
      // loaded machine adds to any timer (at load 17 on 2 cores, 3 waits in 191 took 50–100 ms; at
      // load 13, 5 in 433 took more than 100 ms), well apart from the 500 ms the old code waited
      const waits = waitsBetween(beforeFreeze, afterFreeze, '0.25');
      expect(waits.count).toBe(frozen + 2);
      expect(waits).toEqual({ count: waits.count, within: waits.count });
      // and the first ones did wait for the frozen Redis (the budget), so the bound was put to the test
      const quick = waitsBetween(beforeFreeze, afterFreeze, '0.01');
      expect(quick.within).toBeLessThan(quick.count);
    } finally {
      process.kill(redis.pid, 'SIGCONT');
    }

    // back to shared counting within a few probe intervals
    const before = await sharedCount();
    // a probe every second; the bound only stops the wait (a loaded machine delays every probe)
    const deadline = Date.now() + 30_000;
    let now = before;
    while (Date.now() < deadline) {
      await getOrg();
      now = await sharedCount();
      if (now > before) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(now).toBeGreaterThan(before);
    expect(t.logs.join('')).toContain('answers again');
    expect(sampleValue(await scrapeMetrics(t.app), 'rate_limit_redis_fallback_active')).toBe(0);
  });

  it('no log line the faults produced carries a query\'s text or parameters', () => {
    expect(t.logs.length).toBeGreaterThan(0);
    expect(linesWithQueryText(t.logs)).toEqual([]);
  });
});
