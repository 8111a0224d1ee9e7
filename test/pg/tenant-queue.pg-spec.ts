import { Controller, Get, Module } from '@nestjs/common';
import { sql } from 'drizzle-orm';
import type { AddressInfo } from 'node:net';
import { RequireScope } from '../../src/auth/auth.decorators';
import { DatabaseConnection } from '../../src/database/connection';
import { createOrg, type TestOrg } from '../support/factories';
import { linesWithQueryText } from '../support/log-lines';
import { sampleValue, scrapeMetrics } from '../support/prometheus';
import { createTestApp, type TestApp } from '../support/test-app';

/**
 * A tenant's own flood against a healthy database: with one request in
 * progress per key, its requests wait in its queue. Those that spend their
 * deadline there are answered 503 and told apart from a database fault: a
 * request that waited its whole budget for a slot is a tenant rejection
 * (`tenant_concurrency_rejections_total`), one that got its slot with too
 * little time left and ran out on the database is a tenant-queue deadline
 * (`tenant_queue_deadline_answers_total`, and the warning that says so).
 * Never a "database unavailable" line: that warning pages someone about the
 * database. Both warnings are written at most once per 10 s, the next one
 * saying how many were left out.
 *
 * Each request of the flood holds the database for SLOW_MS (a server-side
 * sleep, which PGlite cannot interrupt: server only), so the slot passes on
 * every SLOW_MS and the request holding it when its deadline comes is cut
 * on the database after most of its budget went waiting: one at least per
 * flood, however fast or slow the machine.
 */
const SLOW_MS = 200;
const FLOOD = 40;
const QUEUE_WARNING = "request deadline spent waiting in its tenant's queue";

@Controller('test-only')
class SlowController {
  constructor(private readonly connection: DatabaseConnection) {}

  @Get('slow')
  @RequireScope('org:read')
  async slow(): Promise<{ data: { slept_ms: number } }> {
    await this.connection.db.execute(sql`select pg_sleep(${SLOW_MS / 1000})`);
    return { data: { slept_ms: SLOW_MS } };
  }
}

@Module({ controllers: [SlowController] })
class SlowModule {}

describe("a tenant's flood is logged and counted as its queue, not as the database", () => {
  let t: TestApp;
  let org: TestOrg;
  let base: string;

  beforeAll(async () => {
    // the deadline (the statement timeout and a margin) is long beside SLOW_MS, however busy the machine,
    // so that a request that did not wait never runs out of time on the database
    t = await createTestApp(
      {
      metricsPort: 0,
      host: '127.0.0.1',
      orgConcurrency: 1,
      keyConcurrency: 1,
      dbStatementTimeoutMs: 2000,
      httpMaxConnections: 10_000,
      httpMaxConnectionsPerAddress: 10_000,
      },
      { imports: [SlowModule] },
    );
    org = await createOrg(t.app);
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/api/v1`;
  });
  afterAll(() => t?.close());

  it('503s from the flood are tenant rejections or tenant-queue deadlines; no "database unavailable" line', async () => {
    const statuses = new Map<number, number>();
    const answers = await Promise.all(
      Array.from({ length: FLOOD }, async () => {
        const res = await fetch(`${base}/test-only/slow`, { headers: { authorization: org.auth } });
        const body = (await res.json()) as { error?: { code?: string } };
        if (res.status === 503) {
          expect(body.error?.code).toBe('service_unavailable');
          expect(res.headers.get('retry-after')).not.toBeNull();
        }
        return res.status;
      }),
    );
    for (const status of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const metrics = await scrapeMetrics(t.app);
    const queueAnswers = sampleValue(metrics, 'tenant_queue_deadline_answers_total');
    const rejections = sampleValue(metrics, 'tenant_concurrency_rejections_total', { bound: 'key' }) + sampleValue(metrics, 'tenant_concurrency_rejections_total', { bound: 'organization' });
    // the flood did what it is for: requests ran out of time after a wait in the queue
    expect(queueAnswers).toBeGreaterThan(0);
    // only 200s and 503s, and every 503 is one of the two tenant answers, counted as such
    expect([...statuses.keys()].filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(statuses.get(503)).toBe(queueAnswers + rejections);

    const lines = t.logs.join('').split('\n').filter(Boolean);
    expect(lines.filter((line) => line.includes('database unavailable'))).toEqual([]);
    const queueLines = lines.filter((line) => line.includes(QUEUE_WARNING)).map((line) => JSON.parse(line) as { level: string; queued_ms: number; repeated?: number });
    expect(queueLines.length).toBeGreaterThan(0);
    expect(queueLines[0]).toMatchObject({ level: 'warn', queued_ms: expect.any(Number) });
    // at a bounded rate: one line, then one per 10 s with the count of those left out, never one per answer
    const written = queueLines.length + queueLines.reduce((sum, line) => sum + (line.repeated ?? 0), 0);
    expect(written).toBeLessThanOrEqual(queueAnswers);
    if (queueAnswers > 1) expect(queueLines.length).toBeLessThan(queueAnswers);
    expect(linesWithQueryText(lines)).toEqual([]);
  }, 600_000);
});
