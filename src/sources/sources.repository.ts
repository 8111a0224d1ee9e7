import { Injectable } from '@nestjs/common';
import { and, count, eq, ne, sql } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import type { PageRequest } from '../common/pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { lockOrgRow } from '../database/org-scoped-lock';
import { orgScopedReads } from '../database/org-scoped-reads';
import { upsertOrgRow, upsertOrgRowsOneByOne } from '../database/org-scoped-upsert';
import { sources } from '../database/sources.table';
import { documents } from '../database/sources.table';
import { removeFromAgentLists } from '../agents/agent-references.repository';
import type { SourceRow } from './sources.mapper';

export type NewSourceRow = typeof sources.$inferInsert;
export type NewDocumentRow = typeof documents.$inferInsert;

export const UPLOAD_SOURCE_NAME = 'Uploaded files';

@Injectable()
export class SourcesRepository {
  private readonly reads;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.reads = orgScopedReads(txHost, sources, { statementPrefix: 'sources' });
  }

  findById(orgId: string, id: string): Promise<SourceRow | null> {
    return this.reads.findById(orgId, id);
  }

  listPage(orgId: string, page: PageRequest): Promise<SourceRow[]> {
    return this.reads.listPage(orgId, page);
  }

  /** Row-locks the source for its delete (a concurrent delete of the same source waits, then finds nothing). */
  findForUpdate(orgId: string, id: string): Promise<SourceRow | null> {
    return lockOrgRow(this.txHost.tx, sources, orgId, id);
  }

  async findUpload(orgId: string): Promise<SourceRow | null> {
    const [row] = await this.txHost.tx
      .select()
      .from(sources)
      .where(and(eq(sources.orgId, orgId), eq(sources.type, 'upload')));
    return row ?? null;
  }

  /** Sources that count against `limits.sources`: all but the upload singleton. */
  async countCapped(orgId: string): Promise<number> {
    const [row] = await this.txHost.tx
      .select({ n: count() })
      .from(sources)
      .where(and(eq(sources.orgId, orgId), ne(sources.type, 'upload')));
    return Number(row?.n ?? 0);
  }

  async insert(row: NewSourceRow): Promise<SourceRow> {
    const [created] = await this.txHost.tx.insert(sources).values(row).returning();
    return created;
  }

  /** A fresh, empty upload singleton (after the old one was deleted). */
  async insertUploadSingleton(orgId: string): Promise<void> {
    await this.txHost.tx
      .insert(sources)
      .values({ id: newId('source'), orgId, type: 'upload', name: UPLOAD_SOURCE_NAME, syncStatus: 'ready', documentCount: 0 })
      .onConflictDoNothing({ target: sources.orgId, where: sql`${sources.type} = 'upload'` });
  }

  /** Deletes the source and its documents; returns false when there was no such source. */
  async deleteWithDocuments(orgId: string, id: string): Promise<boolean> {
    await this.txHost.tx.delete(documents).where(and(eq(documents.orgId, orgId), eq(documents.sourceId, id)));
    const rows = await this.txHost.tx
      .delete(sources)
      .where(and(eq(sources.orgId, orgId), eq(sources.id, id)))
      .returning({ id: sources.id });
    return rows.length > 0;
  }

  /**
   * Removes every `data_sources` entry naming the source from every agent of
   * the organization, soft-deleted ones included. Returns how many changed.
   */
  removeSourceFromAgents(orgId: string, sourceId: string): Promise<number> {
    return removeFromAgentLists(this.txHost.tx, orgId, 'dataSources', { source_id: sourceId });
  }

  /** Fixture upsert by id, scoped to the organization: false when the id is another organization's. */
  upsert(row: NewSourceRow): Promise<boolean> {
    return upsertOrgRow(this.txHost.tx, sources, row.orgId, row);
  }

  /** Returns the document ids written (another organization's ids are not). */
  upsertDocuments(orgId: string, rows: NewDocumentRow[]): Promise<string[]> {
    return upsertOrgRowsOneByOne(this.txHost.tx, documents, orgId, rows);
  }
}
