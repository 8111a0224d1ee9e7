import { Inject, Injectable, Optional, type OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { LOGGER, type AppLogger } from './logger';

/** What a batched job did: rows removed, in how many batches (one transaction each), the longest of them. */
export interface JobWork {
  rows: number;
  batches: number;
  /** the longest batch transaction: how long its row locks were held at most */
  longestBatchMs: number;
}

/**
 * Between two batches a purge waits as long as the last batch took (at most
 * a second): half of one connection at most, so requests served meanwhile keep
 * their latency (docs/performance.md, "Jobs at scale").
 */
export function pauseAfter(batchMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(1000, Math.max(0, batchMs))));
}

/** A job the service runs on a cron expression; `run` answers how many rows it removed, or its batches too. */
interface ScheduledJob {
  name: string;
  /** null: the job is off (its setting is `off`) */
  cron: string | null;
  run(now: Date): Promise<number | JobWork>;
}

/** What one run did: the one record every scheduled run produces (logged; metrics hook in here). */
export interface ScheduledJobRun {
  job: string;
  outcome: 'ok' | 'failed' | 'still-running';
  duration_ms: number;
  rows_removed: number;
  /** batches the run worked in (0 for a job that does not report them) */
  batches?: number;
  longest_batch_ms?: number;
}

/**
 * What counts the runs: the metrics (`Metrics`, provided under this token by
 * src/metrics/metrics.module.ts). An interface of this folder, because
 * metrics builds on common and common imports nothing above it.
 */
interface JobRunRecorder {
  jobScheduled(job: string): void;
  jobRun(run: ScheduledJobRun): void;
}
export const JOB_RUN_RECORDER = Symbol('JOB_RUN_RECORDER');

/**
 * The single place a scheduled job runs. Modules declare a job with
 * `schedule()`; the cron entry, the one-run-at-a-time guard, the timing,
 * the log line and error containment are here, so every job behaves alike.
 * The SchedulerRegistry exists only when jobs are enabled (config.jobsEnabled),
 * never in one-shot CLI commands, which call the services directly.
 */
@Injectable()
export class ScheduledJobs implements OnApplicationShutdown {
  private readonly jobs = new Map<string, { job: ScheduledJob; cron: CronJob; running: boolean }>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Inject(JOB_RUN_RECORDER) private readonly metrics: JobRunRecorder,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {}

  /** Registers and starts `job` when jobs are enabled and its cron is not off; returns whether it did. */
  schedule(job: ScheduledJob): boolean {
    if (!this.config.jobsEnabled || job.cron === null || !this.registry) return false;
    // UTC, so "0 3 * * *" means the same on every instance whatever its TZ
    const cron = CronJob.from({ cronTime: job.cron, onTick: () => void this.runNow(job.name), start: false, utcOffset: 0 });
    this.jobs.set(job.name, { job, cron, running: false });
    this.registry.addCronJob(job.name, cron);
    this.metrics.jobScheduled(job.name);
    cron.start();
    this.logger.info({ job: job.name, cron: job.cron }, 'scheduled job registered');
    return true;
  }

  /**
   * Runs a registered job now (what a cron tick does). One run at a time per
   * instance: a tick that finds the previous run still going does nothing;
   * across instances the job's own locking decides. A failure is logged and
   * retried on the next tick; it never escapes into the process.
   */
  async runNow(name: string): Promise<ScheduledJobRun> {
    const entry = this.jobs.get(name);
    if (!entry) throw new Error(`no scheduled job named ${name}`);
    if (entry.running) return this.record({ job: name, outcome: 'still-running', duration_ms: 0, rows_removed: 0 });
    entry.running = true;
    const started = performance.now();
    try {
      const work = await entry.job.run(new Date());
      const duration_ms = performance.now() - started;
      if (typeof work === 'number') return this.record({ job: name, outcome: 'ok', duration_ms, rows_removed: work });
      return this.record({ job: name, outcome: 'ok', duration_ms, rows_removed: work.rows, batches: work.batches, longest_batch_ms: Math.round(work.longestBatchMs * 10) / 10 });
    } catch (error) {
      return this.record({ job: name, outcome: 'failed', duration_ms: performance.now() - started, rows_removed: 0 }, error as Error);
    } finally {
      entry.running = false;
    }
  }

  onApplicationShutdown(): void {
    for (const [name, { cron }] of this.jobs) {
      void cron.stop();
      if (this.registry?.doesExist('cron', name)) this.registry.deleteCronJob(name);
    }
    this.jobs.clear();
  }

  private record(run: ScheduledJobRun, error?: Error): ScheduledJobRun {
    this.metrics.jobRun(run);
    const fields = { ...run, duration_ms: Math.round(run.duration_ms * 10) / 10 };
    if (error) this.logger.error({ ...fields, err: { message: error.message } }, 'scheduled job failed; retried on the next tick');
    else if (run.outcome === 'still-running') this.logger.warn(fields, 'scheduled job skipped: the previous run is still going');
    else this.logger[run.rows_removed > 0 ? 'info' : 'debug'](fields, 'scheduled job ran');
    return run;
  }
}
