import { Injectable } from '@nestjs/common';
import { and, count, eq, sql } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { lockOrgRow } from '../database/org-scoped-lock';
import { orgScopedReads } from '../database/org-scoped-reads';
import { upsertOrgRow } from '../database/org-scoped-upsert';
import { customTools } from './custom-tools.table';
import { removeFromAgentLists } from '../agents/agent-references.repository';
import type { CustomToolRow } from './custom-tools.mapper';

export type NewCustomToolRow = typeof customTools.$inferInsert;
export type CustomToolChanges = Partial<Omit<NewCustomToolRow, 'id' | 'orgId' | 'name' | 'createdAt'>>;

@Injectable()
export class CustomToolsRepository {
  private readonly reads;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.reads = orgScopedReads(txHost, customTools, { statementPrefix: 'custom_tools' });
  }

  findById(orgId: string, id: string): Promise<CustomToolRow | null> {
    return this.reads.findById(orgId, id);
  }

  listPage(orgId: string, page: PageRequest): Promise<CustomToolRow[]> {
    return this.reads.listPage(orgId, page);
  }

  /** Row-locks the tool for a read-modify-write (concurrent PATCHes apply one after the other). */
  /** Row-locks the tool for a read-modify-write (concurrent PATCHes apply one after the other). */
  findForUpdate(orgId: string, id: string): Promise<CustomToolRow | null> {
    return lockOrgRow(this.txHost.tx, customTools, orgId, id);
  }

  async countByOrg(orgId: string): Promise<number> {
    const [row] = await this.txHost.tx.select({ n: count() }).from(customTools).where(eq(customTools.orgId, orgId));
    return Number(row?.n ?? 0);
  }

  /** Names of the organization equal to `base` or `base_<n>` (base is [a-z0-9_] only, safe in a regex). */
  async namesWithBase(orgId: string, base: string): Promise<string[]> {
    const rows = await this.txHost.tx
      .select({ name: customTools.name })
      .from(customTools)
      .where(and(eq(customTools.orgId, orgId), sql`${customTools.name} ~ ${`^${base}(_[0-9]+)?$`}`));
    return rows.map((row) => row.name);
  }

  async findIdByName(orgId: string, name: string): Promise<string | null> {
    const [row] = await this.txHost.tx
      .select({ id: customTools.id })
      .from(customTools)
      .where(and(eq(customTools.orgId, orgId), eq(customTools.name, name)));
    return row?.id ?? null;
  }

  async insert(row: NewCustomToolRow): Promise<CustomToolRow> {
    const [created] = await this.txHost.tx.insert(customTools).values(row).returning();
    return created;
  }

  async update(orgId: string, id: string, changes: CustomToolChanges): Promise<CustomToolRow | null> {
    const [row] = await this.txHost.tx
      .update(customTools)
      .set({ ...changes, updatedAt: new Date() })
      .where(and(eq(customTools.orgId, orgId), eq(customTools.id, id)))
      .returning();
    return row ?? null;
  }

  /** Hard delete; returns the deleted tool's name, or null when there was none. */
  async deleteReturningName(orgId: string, id: string): Promise<string | null> {
    const [row] = await this.txHost.tx
      .delete(customTools)
      .where(and(eq(customTools.orgId, orgId), eq(customTools.id, id)))
      .returning({ name: customTools.name });
    return row?.name ?? null;
  }

  /**
   * Removes every `{ name }` tool reference from every agent of the
   * organization, soft-deleted ones included (they may be restored). Returns
   * how many agents changed.
   */
  removeToolFromAgents(orgId: string, name: string): Promise<number> {
    return removeFromAgentLists(this.txHost.tx, orgId, 'tools', { name });
  }

  /**
   * Fixture upsert by id, scoped to the organization. `keepName`: a name the
   * fixture did not spell out never renames an existing tool (names are immutable).
   * False when the id is another organization's.
   */
  upsert(row: NewCustomToolRow, options: { keepName?: boolean } = {}): Promise<boolean> {
    const { id: _id, orgId, name: _name, ...rest } = row;
    return upsertOrgRow(this.txHost.tx, customTools, orgId, row, options.keepName ? rest : undefined);
  }
}
