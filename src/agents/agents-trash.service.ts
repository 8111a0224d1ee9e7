import { Inject, Injectable } from '@nestjs/common';
import { LOGGER, type AppLogger } from '../common/logger';
import { pauseAfter } from '../common/scheduled-jobs';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { AgentsTrashRepository } from './agents-trash.repository';
import { trashWindowStart } from './agents.rules';

const TRASH_PURGE_BATCH_SIZE = 500;

export interface TrashPurgeResult {
  /** the cut-off: agents soft-deleted before this instant were purged */
  deleted_before: string;
  agents: number;
  triggers: number;
  chatbots: number;
  /** other agents whose `sub_agents` lost a purged id */
  agents_updated: number;
  batches: number;
  /** the longest batch transaction, in ms: how long it held its row locks at most */
  longest_batch_ms: number;
  /** true when another instance held the purge lock and this run stopped early */
  skipped: boolean;
}

/**
 * Hard-deletes agents soft-deleted more than 30 days before `now`, with what
 * only belonged to them: their triggers and chatbots (each has one `agent_id`,
 * so a row bound to a purged agent belongs to it alone). Conversations stay:
 * they are the organization's history. Connectors, sources and custom tools
 * are organization-wide and stay too. Purged ids leave other agents' `sub_agents`.
 *
 * Batches of 500 agents, one transaction each, so a huge trash never holds
 * locks for long. Each batch first takes a transaction-scoped advisory lock;
 * an instance that cannot get it stops (another instance is purging), so
 * several instances never work on the same rows or deadlock each other.
 */
@Injectable()
export class AgentsTrashService {
  constructor(
    private readonly txHost: TransactionHost<DatabaseTransactions>,
    private readonly repository: AgentsTrashRepository,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async purgeExpiredTrash(now: Date = new Date(), batchSize = TRASH_PURGE_BATCH_SIZE): Promise<TrashPurgeResult> {
    const deletedBefore = trashWindowStart(now);
    const result: TrashPurgeResult = {
      deleted_before: deletedBefore.toISOString(),
      agents: 0,
      triggers: 0,
      chatbots: 0,
      agents_updated: 0,
      batches: 0,
      longest_batch_ms: 0,
      skipped: false,
    };
    for (;;) {
      const batchStarted = performance.now();
      const batch = await this.txHost.withTransaction(async () => {
        if (!(await this.repository.tryLockPurge())) return null;
        const expired = await this.repository.selectExpired(deletedBefore, batchSize);
        if (expired.length === 0) return { agents: 0, triggers: 0, chatbots: 0, agentsUpdated: 0, selected: 0 };
        const agentsUpdated = await this.repository.removeFromSubAgents(expired, now);
        const triggers = await this.repository.deleteTriggersOf(expired);
        const chatbots = await this.repository.deleteChatbotsOf(expired);
        const agents = await this.repository.deleteAgents(expired);
        return { agents, triggers, chatbots, agentsUpdated, selected: expired.length };
      });
      if (batch === null) {
        result.skipped = true;
        break;
      }
      if (batch.selected === 0) break;
      result.longest_batch_ms = Math.max(result.longest_batch_ms, performance.now() - batchStarted);
      result.batches += 1;
      result.agents += batch.agents;
      result.triggers += batch.triggers;
      result.chatbots += batch.chatbots;
      result.agents_updated += batch.agentsUpdated;
      if (batch.selected < batchSize) break;
      await pauseAfter(performance.now() - batchStarted);
    }
    this.logger[result.agents > 0 ? 'info' : 'debug']({ ...result }, 'agent trash purged');
    return result;
  }
}
