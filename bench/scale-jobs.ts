/**
 * The purge jobs at scale, under a fixed request rate: API latency without
 * and with the trash purge (10,000 expired agents with their triggers and
 * chatbots) and the idempotency purge (1,000,000 expired records) running,
 * and the longest transaction holding row locks on the purged tables
 * (sampled from pg_locks / pg_stat_activity every 50 ms) beside each job's
 * own longest batch.
 */
import type { INestApplication } from '@nestjs/common';
import type { Pool } from 'pg';
import { AgentsTrashService } from '../src/agents/agents-trash.service';
import { IdempotencyService } from '../src/idempotency/idempotency.service';
import { percentile } from './scale';
import { loadAverage } from './support';

const RATE_PER_SECOND = 20;
const BASELINE_MS = 15_000;

interface JobsUnderLoad {
  app: INestApplication;
  pool: Pool;
  /** one request through the API; rejects on a non-200 */
  get(path: string): Promise<unknown>;
  paths: string[];
}

/** Sends requests at a fixed rate (not one after another: a slow answer does not slow the schedule) until `until` resolves. */
async function fixedRate(get: (path: string) => Promise<unknown>, paths: string[], until: Promise<unknown>): Promise<{ times: number[]; errors: number }> {
  let done = false;
  void until.finally(() => (done = true));
  const times: number[] = [];
  let errors = 0;
  const inFlight: Array<Promise<void>> = [];
  for (let i = 0; !done; i += 1) {
    const started = performance.now();
    inFlight.push(
      get(paths[i % paths.length]).then(
        () => void times.push(performance.now() - started),
        () => void (errors += 1),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 1000 / RATE_PER_SECOND));
  }
  await Promise.all(inFlight);
  return { times: times.sort((a, b) => a - b), errors };
}

export async function runJobsUnderLoad({ app, pool, get, paths }: JobsUnderLoad): Promise<void> {
  const [{ trashed }] = (await pool.query(`select count(*)::int as trashed from agents where deleted_at < now() - interval '30 days'`)).rows;
  const [{ expired }] = (await pool.query(`select count(*)::int as expired from idempotency_records where expires_at <= now()`)).rows;
  console.log(`\njobs under a fixed rate of ${RATE_PER_SECOND} requests/s (${trashed} expired agents, ${expired} expired idempotency records); load ${loadAverage()}`);

  const baseline = await fixedRate(get, paths, new Promise((resolve) => setTimeout(resolve, BASELINE_MS)));

  let longestLockMs = 0;
  const sampler = setInterval(() => {
    void pool
      .query(
        `select coalesce(max(extract(epoch from clock_timestamp() - a.xact_start) * 1000), 0)::float8 as ms
           from pg_stat_activity a
          where a.pid <> pg_backend_pid() and a.xact_start is not null
            and exists (select 1 from pg_locks l where l.pid = a.pid and l.granted and l.mode = 'RowExclusiveLock'
                          and l.relation in ('agents'::regclass, 'triggers'::regclass, 'chatbots'::regclass, 'idempotency_records'::regclass))`,
      )
      .then((res) => (longestLockMs = Math.max(longestLockMs, res.rows[0].ms)))
      .catch(() => undefined);
  }, 50);
  const started = performance.now();
  const jobs = Promise.all([app.get(AgentsTrashService).purgeExpiredTrash(), app.get(IdempotencyService).purgeExpiredInBatches()]);
  const during = await fixedRate(get, paths, jobs);
  clearInterval(sampler);
  const [trash, idempotency] = await jobs;
  const jobsMs = performance.now() - started;

  const line = (name: string, run: { times: number[]; errors: number }) =>
    console.log(`${name.padEnd(28)}\t${String(run.times.length).padStart(5)}\t${String(run.errors).padStart(3)}\t${percentile(run.times, 0.5).toFixed(1).padStart(7)}\t${percentile(run.times, 0.99).toFixed(1).padStart(7)}`);
  console.log(`${'phase'.padEnd(28)}\t  ok\terrors\t    p50\t    p99`);
  line('without jobs', baseline);
  line('while the purges run', during);
  console.log(
    `trash purge: ${trash.agents} agents, ${trash.triggers} triggers, ${trash.chatbots} chatbots in ${trash.batches} batches, longest ${trash.longest_batch_ms.toFixed(0)} ms; ` +
      `idempotency purge: ${idempotency.rows} records in ${idempotency.batches} batches, longest ${idempotency.longestBatchMs.toFixed(0)} ms; both done in ${(jobsMs / 1000).toFixed(1)} s`,
  );
  console.log(`longest transaction holding row locks on the purged tables (sampled every 50 ms): ${longestLockMs.toFixed(0)} ms; load ${loadAverage()}`);
}
