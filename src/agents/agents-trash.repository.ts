import { Injectable } from '@nestjs/common';
import { and, asc, inArray, isNotNull, lt, not, sql } from 'drizzle-orm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { chatbots } from '../database/chatbots.table';
import { triggers } from '../database/triggers.table';
import { agents } from './agents.table';
import { executeRows } from '../database/execute-rows';

/** Arbitrary constant shared by every instance: one purger at a time, the others skip. */
const TRASH_PURGE_LOCK_KEY = 7_214_091_340;

export interface ExpiredAgent {
  id: string;
  orgId: string;
}

const idsOf = (agents: ExpiredAgent[]) => agents.map((agent) => agent.id);
const orgIdsOf = (agents: ExpiredAgent[]) => [...new Set(agents.map((agent) => agent.orgId))];

/**
 * The SQL of the trash purge. It is a system job that crosses organizations:
 * it selects by `deleted_at` only, then works on the ids it selected (ids are
 * globally unique, and an agent's references never leave its organization).
 */
@Injectable()
export class AgentsTrashRepository {
  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {}

  /** Transaction-scoped advisory lock: released at commit/rollback, so a crashed purger never holds it. */
  async tryLockPurge(): Promise<boolean> {
    const rows = await executeRows<{ locked: boolean }>(this.txHost.tx, sql`select pg_try_advisory_xact_lock(${TRASH_PURGE_LOCK_KEY}) as locked`);
    return rows[0]?.locked === true;
  }

  /** Oldest trash first; `skip locked` so a row another transaction holds is left for the next run. */
  selectExpired(deletedBefore: Date, limit: number): Promise<ExpiredAgent[]> {
    return this.txHost.tx
      .select({ id: agents.id, orgId: agents.orgId })
      .from(agents)
      .where(and(isNotNull(agents.deletedAt), lt(agents.deletedAt, deletedBefore)))
      .orderBy(asc(agents.deletedAt), asc(agents.id))
      .limit(limit)
      .for('update', { skipLocked: true });
  }

  /** Removes the purged ids from every other agent's `sub_agents`, keeping the order of the rest (GIN index on sub_agents). */
  async removeFromSubAgents(expired: ExpiredAgent[], now: Date): Promise<number> {
    const ids = idsOf(expired);
    const purged = sql`${sql.param(ids)}::text[]`;
    const updated = await this.txHost.tx
      .update(agents)
      .set({
        subAgents: sql`array(select s from unnest(${agents.subAgents}) with ordinality as u(s, n) where not (s = any(${purged})) order by n)`,
        updatedAt: now,
      })
      .where(and(inArray(agents.orgId, orgIdsOf(expired)), sql`${agents.subAgents} && ${purged}`, not(inArray(agents.id, ids))))
      .returning({ id: agents.id });
    return updated.length;
  }

  /** `org_id` too, so the (org_id, agent_id) index serves the lookup. */
  async deleteTriggersOf(purged: ExpiredAgent[]): Promise<number> {
    const deleted = await this.txHost.tx
      .delete(triggers)
      .where(and(inArray(triggers.orgId, orgIdsOf(purged)), inArray(triggers.agentId, idsOf(purged))))
      .returning({ id: triggers.id });
    return deleted.length;
  }

  async deleteChatbotsOf(purged: ExpiredAgent[]): Promise<number> {
    const deleted = await this.txHost.tx
      .delete(chatbots)
      .where(and(inArray(chatbots.orgId, orgIdsOf(purged)), inArray(chatbots.agentId, idsOf(purged))))
      .returning({ id: chatbots.id });
    return deleted.length;
  }

  async deleteAgents(expired: ExpiredAgent[]): Promise<number> {
    const ids = idsOf(expired);
    const deleted = await this.txHost.tx
      .delete(agents)
      .where(and(inArray(agents.id, ids), isNotNull(agents.deletedAt)))
      .returning({ id: agents.id });
    return deleted.length;
  }
}
