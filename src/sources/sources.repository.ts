import { Inject, Injectable } from '@nestjs/common';
import { and, count, eq, ne, sql } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import type { PageRequest } from '../common/pagination';
import { DATABASE, type Database } from '../database/database.types';
import { lockOrgRow } from '../database/org-scoped-lock';
import { orgScopedReads } from '../database/org-scoped-reads';
import { upsertOrgRow, upsertOrgRowsOneByOne } from '../database/org-scoped-upsert';
import { documents, sources } from '../database/schema';
import { removeFromAgentLists } from '../agents/agent-references.repository';
import type { SourceRow } from './sources.mapper';

export type NewSourceRow = typeof sources.$inferInsert;
export type NewDocumentRow = typeof documents.$inferInsert;

export const UPLOAD_SOURCE_NAME = 'Uploaded files';

@Injectable()
export class SourcesRepository {
  private readonly reads;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.reads = orgScopedReads(db, sources, { statementPrefix: 'sources' });
  }

  findById(orgId: string, id: string): Promise<SourceRow | null> {
    return this.reads.findById(orgId, id);
  }

  listPage(orgId: string, page: PageRequest): Promise<SourceRow[]> {
    return this.reads.listPage(orgId, page);
  }

  /** Row-locks the source for its delete (a concurrent delete of the same source waits, then finds nothing). */
  findForUpdate(orgId: string, id: string): Promise<SourceRow | null> {
    return lockOrgRow(this.db, sources, orgId, id);
  }

  async findUpload(orgId: string): Promise<SourceRow | null> {
    const [row] = await this.db
      .select()
      .from(sources)
      .where(and(eq(sources.orgId, orgId), eq(sources.type, 'upload')));
    return row ?? null;
  }

  /** Sources that count against `limits.sources`: all but the upload singleton. */
  async countCapped(orgId: string): Promise<number> {
    const [row] = await this.db
      .select({ n: count() })
      .from(sources)
      .where(and(eq(sources.orgId, orgId), ne(sources.type, 'upload')));
    return Number(row?.n ?? 0);
  }

  async insert(row: NewSourceRow): Promise<SourceRow> {
    const [created] = await this.db.insert(sources).values(row).returning();
    return created;
  }

  /** A fresh, empty upload singleton (after the old one was deleted). */
  async insertUploadSingleton(orgId: string): Promise<void> {
    await this.db
      .insert(sources)
      .values({ id: newId('source'), orgId, type: 'upload', name: UPLOAD_SOURCE_NAME, syncStatus: 'ready', documentCount: 0 })
      .onConflictDoNothing({ target: sources.orgId, where: sql`${sources.type} = 'upload'` });
  }

  /** Deletes the source and its documents; returns false when there was no such source. */
  async deleteWithDocuments(orgId: string, id: string): Promise<boolean> {
    await this.db.delete(documents).where(and(eq(documents.orgId, orgId), eq(documents.sourceId, id)));
    const rows = await this.db
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
    return removeFromAgentLists(this.db, orgId, 'dataSources', { source_id: sourceId });
  }

  /** Fixture upsert by id, scoped to the organization: false when the id is another organization's. */
  upsert(row: NewSourceRow): Promise<boolean> {
    return upsertOrgRow(this.db, sources, row.orgId, row);
  }

  /** Returns the document ids written (another organization's ids are not). */
  upsertDocuments(orgId: string, rows: NewDocumentRow[]): Promise<string[]> {
    return upsertOrgRowsOneByOne(this.db, documents, orgId, rows);
  }
}
