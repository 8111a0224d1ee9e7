import { Inject, Injectable, Optional, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { LOGGER, type AppLogger } from '../common/logger';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Metrics } from '../metrics/metrics';
import { AgentsTrashService } from './agents-trash.service';

export const TRASH_PURGE_JOB = 'agents-trash-purge';

/**
 * Runs the trash purge on `config.trashPurgeCron` (TRASH_PURGE_CRON, hourly
 * by default; "off" disables it). The expression comes from config, so the
 * job is registered dynamically; ScheduleModule (and so SchedulerRegistry)
 * exists only when jobs are enabled, never in one-shot CLI commands.
 */
@Injectable()
export class AgentsTrashScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private job: CronJob | null = null;
  private running = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly trash: AgentsTrashService,
    @Inject(LOGGER) private readonly logger: AppLogger,
    private readonly metrics: Metrics,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.jobsEnabled || this.config.trashPurgeCron === null || !this.registry) return;
    this.job = CronJob.from({ cronTime: this.config.trashPurgeCron, onTick: () => this.tick(), start: false, utcOffset: 0 });
    this.registry.addCronJob(TRASH_PURGE_JOB, this.job);
    this.metrics.jobScheduled(TRASH_PURGE_JOB);
    this.job.start();
    this.logger.info({ cron: this.config.trashPurgeCron }, 'agent trash purge scheduled');
  }

  onApplicationShutdown(): void {
    if (!this.job) return;
    void this.job.stop();
    if (this.registry?.doesExist('cron', TRASH_PURGE_JOB)) this.registry.deleteCronJob(TRASH_PURGE_JOB);
    this.job = null;
  }

  /** One run at a time per instance; across instances the purge's advisory lock decides. */
  async tick(): Promise<void> {
    if (this.running) return this.metrics.jobRun({ job: TRASH_PURGE_JOB, outcome: 'still-running', duration_ms: 0, rows_removed: 0 });
    this.running = true;
    try {
      await this.metrics.timeJob(TRASH_PURGE_JOB, async () => {
        const purged = await this.trash.purgeExpiredTrash(new Date());
        return purged.agents + purged.triggers + purged.chatbots;
      });
    } catch (error) {
      this.logger.error({ err: { message: (error as Error).message } }, 'agent trash purge failed');
    } finally {
      this.running = false;
    }
  }
}
