import { randomUUID } from 'node:crypto';
import { SchedulerRegistry } from '@nestjs/schedule';
import { idempotencyRecords } from '../src/idempotency/idempotency.table';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
import { setAgentDeletedAt } from './support/agent-rows';
import { createOrg, type TestOrg } from './support/factories';
import { sampleValue, scrapeMetrics, type Exposition } from './support/prometheus';
import { createTestApp, type TestApp } from './support/test-app';

const DAY_MS = 24 * 60 * 60 * 1000;
// scheduled (so the runner knows them), but never due during the test: the test runs them itself
const NEVER_DURING_THE_TEST = '0 0 1 1 *';

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp({ metricsPort: 0, host: '127.0.0.1', jobsEnabled: true, trashPurgeCron: NEVER_DURING_THE_TEST, idempotencyPurgeCron: NEVER_DURING_THE_TEST });
  org = await createOrg(t.app);
});
afterAll(() => t.close());

const scrape = () => scrapeMetrics(t.app);

/**
 * Runs a scheduled job as its cron tick does, and waits until the metrics
 * have recorded the run (a tick does not return the run's promise).
 */
async function tick(job: string): Promise<void> {
  const runs = (e: Exposition) => (['success', 'failure', 'skipped'] as const).reduce((n, outcome) => n + sampleValue(e, 'job_runs_total', { job_name: job, outcome }), 0);
  const before = runs(await scrape());
  void t.app.get(SchedulerRegistry).getCronJob(job).fireOnTick();
  for (let waited = 0; runs(await scrape()) === before; waited += 20) {
    if (waited > 10_000) throw new Error(`${job} did not record a run`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** On the embedded engine each test file has its own database, so the rows removed are exactly ours. */
const PRIVATE_DATABASE = !process.env.DATABASE_URL;

function jobSamples(e: Exposition, job: string) {
  const labels = { job_name: job };
  return {
    success: sampleValue(e, 'job_runs_total', { ...labels, outcome: 'success' }),
    failure: sampleValue(e, 'job_runs_total', { ...labels, outcome: 'failure' }),
    rows: sampleValue(e, 'job_rows_removed_total', labels),
    runs: sampleValue(e, 'job_duration_seconds_count', labels),
    seconds: sampleValue(e, 'job_duration_seconds_sum', labels),
    lastSuccess: sampleValue(e, 'job_last_success_timestamp_seconds', labels),
  };
}

describe('scheduled job metrics: runs, rows removed, duration, last success', () => {
  test('both jobs have their series from start-up, before any run', async () => {
    const e = await scrape();
    for (const job of ['agents-trash-purge', 'idempotency-purge']) {
      expect(e.samples).toContainEqual({ name: 'job_runs_total', labels: { job_name: job, outcome: 'success' }, value: 0 });
      expect(e.samples).toContainEqual({ name: 'job_last_success_timestamp_seconds', labels: { job_name: job }, value: 0 });
    }
  });

  test('a trash purge run: one successful run, its rows removed, its duration, its time', async () => {
    const created = await t.http
      .post('/api/v1/agents')
      .set('Authorization', org.auth)
      .send({ handle: `h${randomUUID().replace(/-/g, '').slice(0, 12)}`, name: 'Old', instructions: 'x' });
    expect(created.status).toBe(201);
    await t.http.delete(`/api/v1/agents/${created.body.data.id}`).set('Authorization', org.auth).expect(200);
    await setAgentDeletedAt(t, created.body.data.id, new Date(Date.now() - 31 * DAY_MS));

    const before = jobSamples(await scrape(), 'agents-trash-purge');
    const startedAt = Date.now() / 1000;
    await tick('agents-trash-purge');
    const after = jobSamples(await scrape(), 'agents-trash-purge');

    expect(after.success - before.success).toBe(1);
    expect(after.failure - before.failure).toBe(0);
    // one agent, no triggers or chatbots
    if (PRIVATE_DATABASE) expect(after.rows - before.rows).toBe(1);
    else expect(after.rows - before.rows).toBeGreaterThanOrEqual(1);
    expect(after.runs - before.runs).toBe(1);
    expect(after.seconds - before.seconds).toBeGreaterThan(0);
    expect(after.lastSuccess).toBeGreaterThanOrEqual(Math.floor(startedAt));
  });

  test('an idempotency purge run counts the expired records it deleted', async () => {
    const now = Date.now();
    await t.connection.db.insert(idempotencyRecords).values(
      Array.from({ length: 4 }, (_, i) => ({
        orgId: org.orgId,
        key: `expired-${i}-${randomUUID()}`,
        fingerprint: 'f',
        status: 201,
        body: {},
        createdAt: new Date(now - 2 * DAY_MS),
        expiresAt: new Date(now - 1000),
      })),
    );
    const before = jobSamples(await scrape(), 'idempotency-purge');
    await tick('idempotency-purge');
    const after = jobSamples(await scrape(), 'idempotency-purge');
    expect(after.success - before.success).toBe(1);
    // on a shared server, other files' expired records may go too
    if (PRIVATE_DATABASE) expect(after.rows - before.rows).toBe(4);
    else expect(after.rows - before.rows).toBeGreaterThanOrEqual(4);
    expect(after.runs - before.runs).toBe(1);
  });

  test('a failed run is counted as a failure, without rows or a new success time', async () => {
    const before = jobSamples(await scrape(), 'idempotency-purge');
    // the database goes away under the job: the run fails, the runner contains it
    const batch = jest
      .spyOn(t.app.get(IdempotencyRepository), 'deleteExpiredBatch')
      .mockRejectedValueOnce(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }));
    await tick('idempotency-purge');
    batch.mockRestore();
    const after = jobSamples(await scrape(), 'idempotency-purge');
    expect(after.failure - before.failure).toBe(1);
    expect(after.success - before.success).toBe(0);
    expect(after.rows - before.rows).toBe(0);
    expect(after.lastSuccess).toBe(before.lastSuccess);
  });
});
