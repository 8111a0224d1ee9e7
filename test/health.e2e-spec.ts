import { sql } from 'drizzle-orm';
import { servedRoutes } from '../src/http-app';
import { HealthService } from '../src/health/health.service';
import { Metrics } from '../src/metrics/metrics';
import { createTestApp, type TestApp } from './support/test-app';

/** GET /healthz and GET /readyz: probes an orchestrator can use, outside /api/v1, no key. */

let t: TestApp;
beforeAll(async () => {
  // a budget of one request per minute: the probes must not count against anything
  t = await createTestApp({ rateLimitPerMinute: 1, rateLimitPerHour: 1 });
});
afterAll(() => t.close());

describe('liveness', () => {
  test('GET /healthz answers 200 JSON without a key, through the pipeline (request id, log line)', async () => {
    const res = await t.http.get('/healthz');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ data: { status: 'ok' }, meta: { request_id: res.headers['x-request-id'] } });
    expect(t.logs.some((line) => line.includes('"msg":"request"') && line.includes('"path":"/healthz"') && line.includes(res.headers['x-request-id']))).toBe(true);
  });

  test('they live outside /api/v1 only, and are not in the v1 OpenAPI document', async () => {
    expect((await t.http.get('/api/v1/healthz')).status).toBe(404);
    expect((await t.http.get('/api/v1/readyz')).status).toBe(404);
    const document = (await t.http.get('/api/v1/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths).filter((path) => /healthz|readyz/.test(path))).toEqual([]);
    // every route outside the prefix is known: the reference pages and the two probes, nothing else escaped /api/v1
    const outside = servedRoutes(t.app)
      .filter(({ method, path }) => method !== 'HEAD' && !/^\/api\/v1(\/|$)/.test(path) && !/^\/docs(\/|$)/.test(path))
      .map(({ method, path }) => `${method} ${path}`)
      .sort();
    expect(outside).toEqual(['GET /healthz', 'GET /readyz']);
  });

  test('public and not rate limited: many probes with a budget of one request a minute', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await t.http.get('/healthz')).status).toBe(200);
      expect((await t.http.get('/readyz').set('Authorization', 'Bearer svc_live_not-a-key')).status).toBe(200);
    }
  });
});

describe('readiness', () => {
  test('200 with every check named: database, migrations at head, Redis not configured, not draining', async () => {
    const res = await t.http.get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ status: 'ready', checks: { draining: 'ok', database: 'ok', migrations: 'ok', redis: 'not_configured' } });
  });

  test('a migration missing from the database: 503 naming migrations', async () => {
    const rows = (await t.connection.db.execute(sql`select id, hash, created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`)) as unknown as {
      rows: Array<{ id: number; hash: string; created_at: string }>;
    };
    const last = rows.rows[0];
    await t.connection.db.execute(sql`delete from drizzle.__drizzle_migrations where id = ${last.id}`);
    try {
      const res = await t.http.get('/readyz');
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.body.error.details.failing).toEqual(['migrations']);
      expect(res.body.error.details.checks.migrations).toMatch(/^failed: \d+ of \d+ migrations applied$/);
    } finally {
      await t.connection.db.execute(sql`insert into drizzle.__drizzle_migrations (id, hash, created_at) values (${last.id}, ${last.hash}, ${last.created_at})`);
    }
    expect((await t.http.get('/readyz')).status).toBe(200);
  });

  test('draining: /readyz 503 naming it, while every other route is still served', async () => {
    t.app.get(HealthService).startDraining();
    const res = await t.http.get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'service_unavailable', message: 'Not ready: draining (shutting down).', details: { failing: ['draining'] } });
    expect((await t.http.get('/healthz')).status).toBe(200);
    expect((await t.http.get('/api/v1/')).status).toBe(200);
  });
});

describe('readiness of dependencies that do not answer', () => {
  test('Redis configured but unreachable: 200, degraded (the limiter counts in memory), and the metric says so', async () => {
    const app = await createTestApp({ redisUrl: 'redis://127.0.0.1:1', metricsPort: 0 });
    try {
      const res = await app.http.get('/readyz');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        status: 'ready',
        checks: { draining: 'ok', database: 'ok', migrations: 'ok', redis: expect.stringMatching(/^degraded: (error code [0-9A-Z_]+|no answer within \d+ ms|\w+ \(no error code\))$/) },
        degraded: ['redis'],
      });
      const metrics = await app.app.get(Metrics).render();
      expect(metrics).toMatch(/^readiness_degraded\{check="redis"\} 1$/m);
      // the API serves on
      expect((await app.http.get('/api/v1/')).status).toBe(200);
    } finally {
      await app.close().catch(() => undefined);
    }
  });

  test('the database closed: 503 naming database and migrations; Redis still only degraded', async () => {
    const app = await createTestApp({ redisUrl: 'redis://127.0.0.1:1' });
    try {
      await app.connection.close();
      const down = await app.http.get('/readyz');
      expect(down.status).toBe(503);
      expect(down.body.error.details.failing).toEqual(['database', 'migrations']);
      // the driver's error code or the error's class, never its message (Drizzle's carries the query text)
      const shown = /^(failed|degraded): (error code [0-9A-Z_]+|no answer within \d+ ms|\w+ \(no error code\))$/;
      expect(down.body.error.details.checks).toEqual(
        expect.objectContaining({ database: expect.stringMatching(shown), migrations: expect.stringMatching(shown), redis: expect.stringMatching(shown) }),
      );
      expect(down.body.error.message).toMatch(/^Not ready: database \(.+\), migrations \(.+\)\.$/);
      expect(JSON.stringify(down.body)).not.toMatch(/select|query|params/i);
    } finally {
      await app.close().catch(() => undefined);
    }
  });
});
