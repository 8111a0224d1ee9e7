import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { REDIS_COMMAND_TIMEOUT_MS } from '../src/rate-limit/redis-rate-limit.storage';
import { createOrg } from './support/factories';
import { sampleValue, scrapeMetrics } from './support/prometheus';
import { describeWithRedis, startRedisFromPath, type TestRedis } from './support/redis-server';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Redis trouble costs at most one timeout. A frozen Redis
 * (SIGSTOP: the connection stays open, nothing answers) must not add its
 * command timeout to every request; once it answers again, counting is
 * shared again.
 */

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
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
  }, 60_000);

  afterAll(async () => {
    try {
      process.kill(redis.pid, 'SIGCONT');
    } catch {
      /* already gone */
    }
    await t?.close();
    await redis?.stop();
  });

  async function timedGet(): Promise<{ status: number; ms: number }> {
    const started = performance.now();
    const res = await fetch(`${base}/org`, { headers: { authorization: auth } });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
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

  it('costs one command timeout, then requests run at normal latency; shared counting resumes when it answers', async () => {
    for (let i = 0; i < 20; i++) expect((await timedGet()).status).toBe(200);
    const normal: number[] = [];
    for (let i = 0; i < 30; i++) normal.push((await timedGet()).ms);
    const counted = await sharedCount();
    expect(counted).toBe(50);
    expect(sampleValue(await scrapeMetrics(t.app), 'rate_limit_redis_fallback_active')).toBe(0);

    process.kill(redis.pid, 'SIGSTOP');
    try {
      const first = await timedGet();
      expect(first.status).toBe(200);
      // the one request that found out waited at most the command timeout
      expect(first.ms).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS + 500);
      const frozen: number[] = [];
      const started = performance.now();
      // for longer than several probe intervals: the probes must not stall requests either
      while (performance.now() - started < 3_000) {
        const sample = await timedGet();
        expect(sample.status).toBe(200);
        frozen.push(sample.ms);
      }
      expect(frozen.length).toBeGreaterThan(20);
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
      expect(sampleValue(await scrapeMetrics(t.app), 'rate_limit_redis_fallback_active')).toBe(1);
      expect(median(frozen)).toBeLessThan(median(normal) + 5);
      expect(Math.max(...frozen)).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS);
    } finally {
      process.kill(redis.pid, 'SIGCONT');
    }

    // back to shared counting within a few probe intervals
    const before = await sharedCount();
    const deadline = Date.now() + 10_000;
    let now = before;
    while (Date.now() < deadline) {
      await timedGet();
      now = await sharedCount();
      if (now > before) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(now).toBeGreaterThan(before);
    expect(t.logs.join('')).toContain('answers again');
    expect(sampleValue(await scrapeMetrics(t.app), 'rate_limit_redis_fallback_active')).toBe(0);
  }, 60_000);
});
