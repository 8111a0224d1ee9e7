import { Injectable } from '@nestjs/common';
import { getTableColumns } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgScopedById, orgScopedPages } from '../database/org-scoped-reads';
import { upsertOrgRows } from '../database/org-scoped-upsert';
import { connectors } from './connectors.table';
import type { ConnectorRow } from './connectors.mapper';

export type NewConnectorRow = typeof connectors.$inferInsert;
const { tools: _tools, orgId: _orgId, ...summaryColumns } = getTableColumns(connectors);
type ConnectorSummaryRow = Omit<ConnectorRow, 'tools' | 'orgId'>;

@Injectable()
export class ConnectorsRepository {
  private readonly detail;
  private readonly summaries;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.detail = orgScopedById(txHost, connectors, { statementPrefix: 'connectors' });
    this.summaries = orgScopedPages(txHost, connectors, { statementPrefix: 'connectors', columns: summaryColumns });
  }

  findById(orgId: string, id: string): Promise<ConnectorRow | null> {
    return this.detail.findById(orgId, id);
  }

  /** Summaries only: the list leaves out each connector's tools. */
  listPage(orgId: string, page: PageRequest): Promise<ConnectorSummaryRow[]> {
    return this.summaries.listPage(orgId, page);
  }

  /** Upsert by id, scoped to the org; returns the ids written (an id of another org is not touched). */
  upsertMany(orgId: string, rows: NewConnectorRow[]): Promise<string[]> {
    return upsertOrgRows(this.txHost.tx, connectors, orgId, rows, ['type', 'name', 'status', 'statusReason', 'isActive', 'tools', 'createdAt', 'updatedAt']);
  }
}
