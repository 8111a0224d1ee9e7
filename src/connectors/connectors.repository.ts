import { Inject, Injectable } from '@nestjs/common';
import { eq, getTableColumns, sql } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import { orgScopedById, orgScopedPages } from '../database/org-scoped-reads';
import { connectors } from '../database/schema';
import type { ConnectorRow } from './connectors.mapper';

export type NewConnectorRow = typeof connectors.$inferInsert;
const { tools: _tools, orgId: _orgId, ...summaryColumns } = getTableColumns(connectors);
export type ConnectorSummaryRow = Omit<ConnectorRow, 'tools' | 'orgId'>;

@Injectable()
export class ConnectorsRepository {
  private readonly detail;
  private readonly summaries;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.detail = orgScopedById(db, connectors, 'connectors');
    this.summaries = orgScopedPages(db, connectors, 'connectors', { columns: summaryColumns });
  }

  findById(orgId: string, id: string): Promise<ConnectorRow | null> {
    return this.detail.findById(orgId, id);
  }

  /** Summaries only: the list leaves out each connector's tools. */
  listPage(orgId: string, page: PageRequest): Promise<ConnectorSummaryRow[]> {
    return this.summaries.listPage(orgId, page);
  }

  /** Upsert by id, scoped to the org; returns the ids written (an id of another org is not touched). */
  async upsertMany(orgId: string, rows: NewConnectorRow[], tx: DbOrTx = this.db): Promise<string[]> {
    if (rows.length === 0) return [];
    const result = await tx
      .insert(connectors)
      .values(rows.map((row) => ({ ...row, orgId })))
      .onConflictDoUpdate({
        target: connectors.id,
        set: {
          type: sql`excluded.type`,
          name: sql`excluded.name`,
          status: sql`excluded.status`,
          statusReason: sql`excluded.status_reason`,
          isActive: sql`excluded.is_active`,
          tools: sql`excluded.tools`,
          createdAt: sql`excluded.created_at`,
          updatedAt: sql`excluded.updated_at`,
        },
        setWhere: eq(connectors.orgId, orgId),
      })
      .returning({ id: connectors.id });
    return result.map((row) => row.id);
  }
}
