import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { ScheduledJobs } from '../common/scheduled-jobs';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { IdempotencyService } from './idempotency.service';

export const IDEMPOTENCY_PURGE_JOB = 'idempotency-purge';

/**
 * Expired idempotency records deleted on IDEMPOTENCY_PURGE_CRON. Every
 * instance may run it: batches skip rows another instance has locked.
 */
@Injectable()
export class IdempotencyPurgeJob implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly idempotency: IdempotencyService,
    private readonly jobs: ScheduledJobs,
  ) {}

  onApplicationBootstrap(): void {
    this.jobs.schedule({ name: IDEMPOTENCY_PURGE_JOB, cron: this.config.idempotencyPurgeCron, run: (now) => this.idempotency.purgeExpiredInBatches(now) });
  }
}
