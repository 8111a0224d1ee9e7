import { Redis } from 'ioredis';
import { randomBytes, randomUUID } from 'node:crypto';
import { ApiKeysRepository } from '../src/auth/api-keys.repository';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { SCOPES } from '../src/auth/scopes';
import type { AppConfig } from '../src/config/config';
import { OrgsService } from '../src/orgs/orgs.service';
import { REDIS_COMMAND_TIMEOUT_MS, RedisRateLimitStorage } from '../src/rate-limit/redis-rate-limit.storage';
import { createOrg, type TestOrg } from './support/factories';
import { freePort } from '../libs/net/free-port';
import { describeWithRedis, startRedisFromPath, type TestRedis } from './support/redis-server';
import { createTestApp, type TestApp } from './support/test-app';
import { WriteProbeModule } from './support/write-probe.module';

const BAD_KEY = 'Bearer svc_live_this-key-does-not-exist-0000000000000';

/** small limits so a test can reach them: 5 per minute, 8 per hour; plan "free" 3/3 */
const SMALL: Partial<AppConfig> = { rateLimitPerMinute: 5, rateLimitPerHour: 8, rateLimitPlans: { free: { perMinute: 3, perHour: 3 } } };

const apps: TestApp[] = [];
async function app(overrides: Partial<AppConfig> = SMALL): Promise<TestApp> {
  const created = await createTestApp(overrides, { imports: [WriteProbeModule] });
  apps.push(created);
  return created;
}
afterAll(async () => {
  for (const created of apps) await created.close();
});

function rateHeaders(res: { headers: Record<string, string> }) {
  return {
    limit: Number(res.headers['x-ratelimit-limit']),
    remaining: Number(res.headers['x-ratelimit-remaining']),
    reset: Number(res.headers['x-ratelimit-reset']),
  };
}

describe('7. Per API key, a per-minute and a per-hour window, configurable, per plan', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await app();
    org = await createOrg(t.app);
  });

  it('one budget per key across all endpoints, whatever the status', async () => {
    const calls = [
      () => t.http.get('/api/v1/org'),
      () => t.http.get('/api/v1/team'),
      () => t.http.get('/api/v1/test-probes/agent_000000000000000000000000'),
      () => t.http.post('/api/v1/test-probes').send({ handle: `h-${randomUUID().slice(0, 8)}` }),
      () => t.http.get('/api/v1/org'),
    ];
    const remaining: number[] = [];
    for (const call of calls) {
      const res = await call().set('Authorization', org.auth);
      expect(res.status).not.toBe(429);
      remaining.push(rateHeaders(res).remaining);
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    const over = await t.http.get('/api/v1/team').set('Authorization', org.auth);
    expect(over.status).toBe(429);
  });

  it('another key, even of the same organization, has its own budget', async () => {
    const second = await org.key(['org:read']);
    const res = await t.http.get('/api/v1/org').set('Authorization', second.auth);
    expect(res.status).toBe(200);
    expect(rateHeaders(res)).toEqual(expect.objectContaining({ limit: 5, remaining: 4 }));
  });

  it('an organization plan listed in RATE_LIMIT_PLANS gets its own limits', async () => {
    const free = await createOrg(t.app, { plan: 'free' });
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await t.http.get('/api/v1/org').set('Authorization', free.auth);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    // 3/min and 3/h: both windows are full; the hour window resets later, so it is the one shown
    expect(rateHeaders(last!).limit).toBe(3);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(3500);
    expect(Number(last!.headers['retry-after'])).toBeLessThanOrEqual(3600);
  });

  it('the per-minute window is the one shown while it is the more constraining one', async () => {
    // 5/min, 8/h: after 5 hits the minute window is full; the hour window has 3 left
    const o = await createOrg(t.app);
    for (let i = 0; i < 5; i++) await t.http.get('/api/v1/org').set('Authorization', o.auth).expect(200);
    const over = await t.http.get('/api/v1/org').set('Authorization', o.auth).expect(429);
    expect(rateHeaders(over)).toEqual(expect.objectContaining({ limit: 5, remaining: 0 }));
    expect(Number(over.headers['retry-after'])).toBeLessThanOrEqual(60);
  });
});

describe('8. Rate-limit headers on every response; 429 rate_limited with Retry-After; bad keys limited per client IP', () => {
  it('every authenticated response carries X-RateLimit-Limit, -Remaining and -Reset (Unix epoch seconds)', async () => {
    const t = await app({ rateLimitPerMinute: 50, rateLimitPerHour: 1000, rateLimitPlans: {} });
    const org = await createOrg(t.app);
    const readOnly = await org.key(['agents:read']);
    const responses = [
      await t.http.get('/api/v1/org').set('Authorization', org.auth), // 200
      await t.http.get('/api/v1/test-probes/agent_000000000000000000000000').set('Authorization', org.auth), // 404
      await t.http.post('/api/v1/test-probes').set('Authorization', org.auth).send({ handle: 'Bad Handle' }), // 422
      await t.http.get('/api/v1/org').set('Authorization', readOnly.auth), // 403
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 404, 422, 403]);
    const now = Math.floor(Date.now() / 1000);
    for (const res of responses) {
      const headers = rateHeaders(res);
      expect(headers.limit).toBe(50);
      expect(headers.remaining).toBeGreaterThanOrEqual(0);
      expect(headers.reset).toBeGreaterThanOrEqual(now);
      expect(headers.reset).toBeLessThanOrEqual(now + 61);
      expect(res.headers['x-ratelimit-limit-minute']).toBeUndefined(); // no throttler-suffixed headers
    }
  });

  it('over the limit: 429 rate_limited in the error envelope, with Retry-After in seconds', async () => {
    const t = await app();
    const org = await createOrg(t.app);
    for (let i = 0; i < 5; i++) await t.http.get('/api/v1/org').set('Authorization', org.auth).expect(200);
    const res = await t.http.get('/api/v1/org').set('Authorization', org.auth).set('X-Request-ID', 'limited-1');
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: { code: 'rate_limited', message: expect.any(String), request_id: 'limited-1' } });
    const retryAfter = Number(res.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(rateHeaders(res)).toEqual({ limit: 5, remaining: 0, reset: expect.any(Number) });
    expect(rateHeaders(res).reset - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(retryAfter + 1);
  });

  it('requests with a missing or bad key are limited per client IP, so key guessing is throttled', async () => {
    const t = await app();
    const org = await createOrg(t.app);
    // a client working with a valid key behind the same address as the guesser
    expect(rateHeaders(await t.http.get('/api/v1/org').set('Authorization', org.auth).expect(200)).remaining).toBe(4);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await t.http.get('/api/v1/org').set('Authorization', BAD_KEY)).status);
    statuses.push((await t.http.get('/api/v1/org')).status);
    const guessing = await t.http.get('/api/v1/org').set('Authorization', BAD_KEY);
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    expect(guessing.status).toBe(429);
    expect(guessing.body.error.code).toBe('rate_limited');
    // the IP's budget is not the key's: a valid key from the same address still works,
    // also once its cache entry has expired (it is looked up again, not refused)
    jest.spyOn(Date, 'now').mockReturnValue(Date.now() + t.config.apiKeyCacheTtlMs);
    const valid = await t.http.get('/api/v1/org').set('Authorization', org.auth);
    jest.restoreAllMocks();
    expect(valid.status).toBe(200);
    expect(rateHeaders(valid).remaining).toBe(3);
  });

  it('public routes (GET /, GET /openapi.json) are not rate limited and do not use the IP budget (they answer no errors)', async () => {
    const t = await app({ rateLimitPerMinute: 3, rateLimitPerHour: 100, rateLimitPlans: {} });
    for (let i = 0; i < 5; i++) {
      for (const path of ['/api/v1', '/api/v1/openapi.json']) {
        const res = await t.http.get(path);
        expect(res.status).toBe(200);
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
      }
    }
    // key guessing from the same address still has its whole budget, then is throttled
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await t.http.get('/api/v1/org').set('Authorization', BAD_KEY)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    // and with the IP budget spent, the public routes still answer
    expect((await t.http.get('/api/v1')).status).toBe(200);
  });

  it('the OpenAPI document lists the rate-limit headers on every response of every authenticated operation, and no 429 on public ones', async () => {
    const t = await app({ rateLimitPerMinute: 100, rateLimitPerHour: 1000, rateLimitPlans: {} });
    const doc = (await t.http.get('/api/v1/openapi.json').expect(200)).body;
    type Operation = { security?: unknown[]; responses: Record<string, { headers?: Record<string, unknown> }> };
    let publicOperations = 0;
    for (const pathItem of Object.values(doc.paths) as Array<Record<string, Operation>>) {
      for (const operation of Object.values(pathItem)) {
        const isPublic = Array.isArray(operation.security) && operation.security.length === 0;
        if (isPublic) publicOperations += 1;
        for (const response of Object.values(operation.responses)) {
          const names = Object.keys(response.headers ?? {});
          if (isPublic) expect(names).not.toContain('X-RateLimit-Limit');
          else expect(names).toEqual(expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']));
        }
        if (isPublic) expect(Object.keys(operation.responses)).not.toContain('429');
      }
    }
    expect(publicOperations).toBe(2);
  });
});

describe('TRUSTED_PROXIES: the client address behind a balancer', () => {
  const wrongKeyStatuses = async (t: TestApp, forwardedFor: string[]) => {
    const statuses: number[] = [];
    for (const address of forwardedFor) statuses.push((await t.http.get('/api/v1/org').set('Authorization', BAD_KEY).set('X-Forwarded-For', address)).status);
    return statuses;
  };

  it('off by default: X-Forwarded-For is not believed, so a client cannot escape its budget by naming other addresses', async () => {
    const t = await app({ rateLimitPerMinute: 3, rateLimitPerHour: 100, rateLimitPlans: {} });
    expect(await wrongKeyStatuses(t, ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4'])).toEqual([401, 401, 401, 429]);
  });

  it('from a listed proxy, each forwarded client has its own budget for wrong keys (the nearest address not listed)', async () => {
    const t = await app({ rateLimitPerMinute: 3, rateLimitPerHour: 100, rateLimitPlans: {}, trustedProxies: ['127.0.0.0/8'] });
    expect(await wrongKeyStatuses(t, ['203.0.113.1', '203.0.113.1', '203.0.113.1', '203.0.113.1'])).toEqual([401, 401, 401, 429]);
    // another client behind the same proxy is not refused for the first one's guesses; a spoofed entry
    // left of the address the proxy saw changes nothing (203.0.113.2 named it, a proxy on 127.0.0.2 appended it)
    expect(await wrongKeyStatuses(t, ['203.0.113.2', '203.0.113.1, 203.0.113.2', '203.0.113.2, 127.0.0.2'])).toEqual([401, 401, 401]);
    expect(await wrongKeyStatuses(t, ['203.0.113.2'])).toEqual([429]);
  });

  it('from a connection that is not a listed proxy, X-Forwarded-For is ignored', async () => {
    const t = await app({ rateLimitPerMinute: 3, rateLimitPerHour: 100, rateLimitPlans: {}, trustedProxies: ['10.0.0.0/8'] });
    expect(await wrongKeyStatuses(t, ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4'])).toEqual([401, 401, 401, 429]);
  });
});

/** Counts calls into the database client (queries, transactions, pool checkouts) of either engine. */
function countQueries(t: TestApp): () => number {
  const client = (t.connection.db as unknown as { $client: Record<string, unknown> }).$client;
  const spies = ['query', 'transaction', 'connect']
    .filter((method) => typeof client[method] === 'function')
    .map((method) => jest.spyOn(client as Record<string, () => unknown>, method));
  return () => spies.reduce((sum, spy) => sum + spy.mock.calls.length, 0);
}

describe('refused guesses are cheap', () => {
  const guess = () => `Bearer svc_live_${randomBytes(30).toString('base64url')}`;

  it('once the client budget is spent, wrong keys get 429 and each new guess costs one lookup at most (repeats none)', async () => {
    const t = await app({ rateLimitPerMinute: 3, rateLimitPerHour: 100, rateLimitPlans: {} });
    const queries = countQueries(t);
    for (let i = 0; i < 3; i++) expect((await t.http.get('/api/v1/org').set('Authorization', guess())).status).toBe(401);
    const spending = queries();
    expect(spending).toBeGreaterThanOrEqual(3); // the counter sees the lookups of the first guesses
    const perLookup = spending / 3;
    // the clock stands still, so that BAD_KEY stays known unknown however slowly the machine runs
    jest.spyOn(Date, 'now').mockReturnValue(Date.now());
    let newGuesses = 0;
    for (let i = 0; i < 100; i++) {
      const repeat = i % 5 === 0;
      if (!repeat) newGuesses += 1;
      const res = await t.http.get('/api/v1/org').set('Authorization', repeat ? BAD_KEY : guess());
      if (res.status !== 429 || !res.headers['retry-after']) throw new Error(`request ${i}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    jest.restoreAllMocks();
    // BAD_KEY is looked up once, then known unknown; every new guess once
    expect(queries() - spending).toBeLessThanOrEqual((newGuesses + 1) * perLookup);
  });

  it("a spent client's new guesses are looked up one at a time: they hold at most one pool connection", async () => {
    const t = await app({ rateLimitPerMinute: 1, rateLimitPerHour: 100, rateLimitPlans: {} });
    expect((await t.http.get('/api/v1/org').set('Authorization', guess())).status).toBe(401);
    const repository = t.app.get(ApiKeysRepository);
    const find = repository.findCandidatesByPrefix.bind(repository);
    let inFlight = 0;
    let most = 0;
    jest.spyOn(repository, 'findCandidatesByPrefix').mockImplementation(async (prefix) => {
      most = Math.max(most, ++inFlight);
      try {
        return await find(prefix);
      } finally {
        inFlight -= 1;
      }
    });
    const statuses = await Promise.all(Array.from({ length: 20 }, () => t.http.get('/api/v1/org').set('Authorization', guess()).then((res) => res.status)));
    jest.restoreAllMocks();
    expect(statuses).toEqual(Array(20).fill(429));
    expect(most).toBe(1);
  });

  it('an unknown key is remembered as unknown: 50 requests with one wrong key cost one lookup', async () => {
    const t = await app({ rateLimitPerMinute: 1000, rateLimitPerHour: 1000, rateLimitPlans: {} });
    const queries = countQueries(t);
    const wrong = guess();
    expect((await t.http.get('/api/v1/org').set('Authorization', wrong)).status).toBe(401);
    const lookup = queries(); // one lookup (a query, and a pool checkout on PostgreSQL)
    expect(lookup).toBeGreaterThan(0);
    for (let i = 0; i < 49; i++) expect((await t.http.get('/api/v1/org').set('Authorization', wrong)).status).toBe(401);
    expect(queries()).toBe(lookup);
  });

  it('a flood of new guesses does not push a valid key out of memory', async () => {
    const t = await app({ rateLimitPerMinute: 100_000, rateLimitPerHour: 100_000, rateLimitPlans: {} });
    const org = await createOrg(t.app);
    const keys = t.app.get(ApiKeysService);
    const now = Date.now();
    await keys.authenticate(org.auth, now);
    for (let i = 0; i < 10_050; i++) await keys.authenticate(guess(), now).catch(() => undefined);
    // still served from memory: no lookup needed
    expect(keys.authenticateFromMemory(org.auth, now)).toMatchObject({ keyId: org.keyId });
  });
});

describe('10. An idempotent replay still counts against the rate limit', () => {
  it('replays use the budget; over it, 429 and no replay', async () => {
    const t = await app();
    const org = await createOrg(t.app);
    const key = randomUUID();
    const body = { handle: `h-${randomUUID().slice(0, 8)}` };
    const send = () => t.http.post('/api/v1/test-probes').set('Authorization', org.auth).set('Idempotency-Key', key).send(body);
    expect((await send()).status).toBe(201);
    for (let i = 0; i < 4; i++) {
      const replay = await send();
      expect(replay.status).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(rateHeaders(replay).remaining).toBe(3 - i);
    }
    const over = await send();
    expect(over.status).toBe(429);
    expect(over.headers['idempotent-replayed']).toBeUndefined();
  });
});

/** The same organization and key in another instance's database (on PGlite the instances share only Redis). */
async function mirrorKey(target: TestApp, org: TestOrg): Promise<void> {
  // on a server (test:pg) both instances share one database: the key is already there
  if (target.config.databaseUrl) return;
  const orgId = await target.app.get(OrgsService).upsertOrg({
    name: `Mirror ${randomUUID()}`,
    plan: 'pro',
    status: 'active',
    credits: { total: 0, used: 0, remaining: 0, top_up: 0, reset_at: null },
  });
  await target.app.get(ApiKeysService).create({ id: org.keyId, orgId, label: 'mirror', scopes: [...SCOPES], token: org.token });
}

describeWithRedis('"9. Redis" rate-limit tests')('9. With REDIS_URL, several instances share one budget', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedisFromPath();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('two instances against one Redis hold the shared limit within ±1 request', async () => {
    // a generous wait: this test is about sharing, and on a loaded test machine Redis may answer later than
    // the production wait, which decides that request from memory (the wait's own test: redis-faults.e2e-spec.ts)
    const config = { redisUrl: redis.url, rateLimitRedisWaitMs: REDIS_COMMAND_TIMEOUT_MS, rateLimitPerMinute: 12, rateLimitPerHour: 100, rateLimitPlans: {} };
    const one = await app(config);
    const two = await app(config);
    const org = await createOrg(one.app);
    await mirrorKey(two, org);
    // both instances know the key already: which one answers first is then not a matter of a cold lookup
    for (const instance of [one, two]) await instance.app.get(ApiKeysService).authenticate(org.auth);
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? one : two).http.get('/api/v1/org').set('Authorization', org.auth)),
    );
    const ok = responses.filter((r) => r.status === 200).length;
    const limited = responses.filter((r) => r.status === 429).length;
    expect(ok + limited).toBe(30);
    expect(Math.abs(ok - 12)).toBeLessThanOrEqual(1);
    // both instances answered some of the allowed ones, so the budget really was shared
    expect(responses.filter((r, i) => r.status === 200 && i % 2 === 0).length).toBeGreaterThan(0);
    expect(responses.filter((r, i) => r.status === 200 && i % 2 === 1).length).toBeGreaterThan(0);

    // fixed memory: one counter per window for this key, each expiring with its window
    const client = new Redis(redis.url);
    try {
      const keys = (await client.keys('rl:*')).filter((k) => k.includes(org.keyId)).sort();
      expect(keys).toHaveLength(2);
      for (const k of keys) expect(await client.pttl(k)).toBeGreaterThan(0);
      expect(Number(await client.get(keys.find((k) => k.includes(':minute:'))!))).toBe(12);
    } finally {
      client.disconnect();
    }
  });

  it("other clients' wrong keys never refuse a valid key: a fresh instance serves keys it has never seen from an address whose wrong-key budget is spent", async () => {
    const config = { redisUrl: redis.url, rateLimitRedisWaitMs: REDIS_COMMAND_TIMEOUT_MS, rateLimitPerMinute: 3, rateLimitPerHour: 100, rateLimitPlans: {} };
    const old = await app(config);
    const orgs = [await createOrg(old.app), await createOrg(old.app), await createOrg(old.app)];
    // a client without a valid key spends the address's budget (the test client's address is everyone's here)
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await old.http.get('/api/v1/org').set('Authorization', BAD_KEY)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await old.http.get('/api/v1/org').set('Authorization', orgs[0].auth)).status).toBe(200);
    // a deploy: a new instance shares the counters in Redis and has seen no key yet
    const fresh = await app(config);
    for (const org of orgs) await mirrorKey(fresh, org);
    // it learns from Redis that the address has spent its budget for wrong keys …
    expect((await fresh.http.get('/api/v1/org').set('Authorization', BAD_KEY)).status).toBe(429);
    expect((await fresh.http.get('/api/v1/org').set('Authorization', `Bearer svc_live_${randomBytes(30).toString('base64url')}`)).status).toBe(429);
    // … and still serves every valid key, each counted against its own budget
    for (const org of orgs) {
      const res = await fresh.http.get('/api/v1/org').set('Authorization', org.auth);
      expect(res.status).toBe(200);
      expect(rateHeaders(res).limit).toBe(3);
    }
    // the old instance too
    for (const org of orgs) expect((await old.http.get('/api/v1/org').set('Authorization', org.auth)).status).toBe(200);
  });

  it('the hit script is atomic: 60 concurrent hits with a limit of 20 admit exactly 20, counted in both windows', async () => {
    const logs = { warn: jest.fn() } as never;
    // atomicity is under test: every hit waits for Redis's own answer, however loaded the machine
    const storage = new RedisRateLimitStorage(redis.url, logs, REDIS_COMMAND_TIMEOUT_MS);
    try {
      await storage.connect();
      const windows = [
        { name: 'minute', ttlMs: 60_000, limit: 20 },
        { name: 'hour', ttlMs: 3_600_000, limit: 25 },
      ];
      const tracker = `key:atomic-${randomUUID()}`;
      const hits = await Promise.all(Array.from({ length: 60 }, () => storage.hit(tracker, windows)));
      expect(hits.filter((h) => h.allowed)).toHaveLength(20);
      const last = await storage.hit(tracker, windows);
      expect(last.allowed).toBe(false);
      expect(last.windows.map((w) => w.hits)).toEqual([20, 20]); // refused hits are not counted
    } finally {
      await storage.close();
    }
  });

  it('fault: Redis going away fails open to per-instance memory counters, with a logged warning', async () => {
    const own = await startRedisFromPath();
    const t = await app({ redisUrl: own.url, rateLimitPerMinute: 3, rateLimitPerHour: 100, rateLimitPlans: {} });
    const org = await createOrg(t.app);
    await t.http.get('/api/v1/org').set('Authorization', org.auth).expect(200);
    await own.stop();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await t.http.get('/api/v1/org').set('Authorization', org.auth);
      statuses.push(res.status);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
    }
    // the API keeps answering, and this instance still enforces the budget on its own
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(t.logs.join('')).toContain('rate-limit store (Redis) unavailable');
  });

  it('fault: Redis unreachable at start-up — the instance starts and serves, limited in memory', async () => {
    const port = await freePort();
    const t = await app({ redisUrl: `redis://127.0.0.1:${port}`, rateLimitPerMinute: 2, rateLimitPerHour: 100, rateLimitPlans: {} });
    const org = await createOrg(t.app);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await t.http.get('/api/v1/org').set('Authorization', org.auth)).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(t.logs.join('')).toContain('rate-limit store (Redis) unavailable');
  });
});
