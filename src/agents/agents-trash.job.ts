import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { ScheduledJobs } from '../common/scheduled-jobs';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { AgentsTrashService } from './agents-trash.service';

const TRASH_PURGE_JOB = 'agents-trash-purge';

/** The trash purge on TRASH_PURGE_CRON (hourly by default; `off` disables it); rows removed = agents + triggers + chatbots. */
@Injectable()
export class AgentsTrashJob implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly trash: AgentsTrashService,
    private readonly jobs: ScheduledJobs,
  ) {}

  onApplicationBootstrap(): void {
    this.jobs.schedule({
      name: TRASH_PURGE_JOB,
      cron: this.config.trashPurgeCron,
      run: async (now) => {
        const purged = await this.trash.purgeExpiredTrash(now);
        return { rows: purged.agents + purged.triggers + purged.chatbots, batches: purged.batches, longestBatchMs: purged.longest_batch_ms };
      },
    });
  }
}
