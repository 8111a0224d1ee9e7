import { Injectable } from '@nestjs/common';
import { and, count, eq, isNull } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgScopedReads } from '../database/org-scoped-reads';
import { upsertOrgRowsOneByOne } from '../database/org-scoped-upsert';
import { agents } from './agents.table';
import type { AgentRow } from './agents.mapper';

export type NewAgentRow = typeof agents.$inferInsert;
export type AgentChanges = Partial<Omit<NewAgentRow, 'id' | 'orgId' | 'createdAt' | 'deletedAt'>>;

/** Agents of one organization; soft-deleted agents are invisible to every method but the fixture upsert. */
@Injectable()
export class AgentsRepository {
  private readonly live;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.live = orgScopedReads(txHost, agents, { statementPrefix: 'agents_live', where: isNull(agents.deletedAt) });
  }

  findLive(orgId: string, id: string): Promise<AgentRow | null> {
    return this.live.findById(orgId, id);
  }

  /** Newest first (ids start with their creation time); `page.fetch` is limit + 1. */
  listLive(orgId: string, page: PageRequest): Promise<AgentRow[]> {
    return this.live.listPage(orgId, page);
  }

  /** Locks a live agent for the rest of the transaction, so concurrent PATCH/DELETE of it run one after the other. */
  async lockLive(orgId: string, id: string): Promise<AgentRow | null> {
    const [row] = await this.txHost.tx
      .select()
      .from(agents)
      .where(and(eq(agents.orgId, orgId), eq(agents.id, id), isNull(agents.deletedAt)))
      .for('update');
    return row ?? null;
  }

  async countLive(orgId: string): Promise<number> {
    const [row] = await this.txHost.tx
      .select({ n: count() })
      .from(agents)
      .where(and(eq(agents.orgId, orgId), isNull(agents.deletedAt)));
    return Number(row?.n ?? 0);
  }

  /** Like every query, it runs in the open transaction, if any. */
  async insert(orgId: string, row: NewAgentRow): Promise<AgentRow> {
    const [created] = await this.txHost.tx
      .insert(agents)
      .values({ ...row, orgId })
      .returning();
    return created;
  }

  /** The live agent's new state, or undefined when it is gone; like every query, it runs in the open transaction. */
  async update(orgId: string, id: string, changes: AgentChanges): Promise<AgentRow | undefined> {
    const [updated] = await this.txHost.tx
      .update(agents)
      .set(changes)
      .where(and(eq(agents.orgId, orgId), eq(agents.id, id), isNull(agents.deletedAt)))
      .returning();
    return updated;
  }

  async softDelete(orgId: string, id: string, now: Date): Promise<void> {
    await this.txHost.tx
      .update(agents)
      .set({ deletedAt: now, updatedAt: now })
      .where(and(eq(agents.orgId, orgId), eq(agents.id, id), isNull(agents.deletedAt)));
  }

  /**
   * Fixture load: upsert by id, never touching another organization's row;
   * returns the ids written. Rows go one by one: a fixture's agents may carry
   * different column sets, which one multi-row statement would not keep apart.
   */
  upsertMany(orgId: string, rows: NewAgentRow[]): Promise<string[]> {
    return upsertOrgRowsOneByOne(this.txHost.tx, agents, orgId, rows);
  }
}
