import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { LOGGER, type AppLogger } from '../common/logger';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Metrics } from '../metrics/metrics';
import { IdempotencyService } from './idempotency.service';

export const IDEMPOTENCY_PURGE_JOB = 'idempotency-purge';

/**
 * Deletes expired idempotency records on `IDEMPOTENCY_PURGE_CRON`. Every
 * instance may run it: batches skip rows another instance has locked, and a
 * run that is still going when the next tick comes is not started twice.
 */
@Injectable()
export class IdempotencyPurgeJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private running = false;

  constructor(
    private readonly idempotency: IdempotencyService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
    private readonly metrics: Metrics,
    // present only when ScheduleModule is imported (config.jobsEnabled)
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.jobsEnabled || !this.config.idempotencyPurgeCron || !this.scheduler) return;
    const job = CronJob.from({ cronTime: this.config.idempotencyPurgeCron, onTick: () => void this.run(), start: false });
    this.scheduler.addCronJob(IDEMPOTENCY_PURGE_JOB, job);
    this.metrics.jobScheduled(IDEMPOTENCY_PURGE_JOB);
    job.start();
  }

  onApplicationShutdown(): void {
    if (this.scheduler?.doesExist('cron', IDEMPOTENCY_PURGE_JOB)) this.scheduler.deleteCronJob(IDEMPOTENCY_PURGE_JOB);
  }

  async run(): Promise<void> {
    if (this.running) return this.metrics.jobRun({ job: IDEMPOTENCY_PURGE_JOB, outcome: 'still-running', duration_ms: 0, rows_removed: 0 });
    this.running = true;
    try {
      await this.metrics.timeJob(IDEMPOTENCY_PURGE_JOB, () => this.idempotency.purgeExpired());
    } catch (error) {
      this.logger.warn({ err: { message: (error as Error).message } }, 'idempotency purge failed; retried on the next tick');
    } finally {
      this.running = false;
    }
  }
}
