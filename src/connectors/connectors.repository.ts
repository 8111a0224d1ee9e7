import { Inject, Injectable } from '@nestjs/common';
import { and, desc, eq, getTableColumns, lt, sql } from 'drizzle-orm';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import { connectors } from '../database/schema';
import type { ConnectorRow } from './connectors.mapper';

export type NewConnectorRow = typeof connectors.$inferInsert;
const { tools: _tools, orgId: _orgId, ...summaryColumns } = getTableColumns(connectors);
export type ConnectorSummaryRow = Omit<ConnectorRow, 'tools' | 'orgId'>;

@Injectable()
export class ConnectorsRepository {
  private readonly byId;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.byId = db
      .select()
      .from(connectors)
      .where(and(eq(connectors.orgId, sql.placeholder('orgId')), eq(connectors.id, sql.placeholder('id'))))
      .prepare('connector_detail_by_id');
  }

  async findById(orgId: string, id: string): Promise<ConnectorRow | null> {
    const [row] = await this.byId.execute({ orgId, id });
    return row ?? null;
  }

  list(orgId: string, afterId: string | null, fetch: number): Promise<ConnectorSummaryRow[]> {
    return this.db
      .select(summaryColumns)
      .from(connectors)
      .where(and(eq(connectors.orgId, orgId), afterId === null ? undefined : lt(connectors.id, afterId)))
      .orderBy(desc(connectors.id))
      .limit(fetch);
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
