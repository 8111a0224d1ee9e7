import { Injectable } from '@nestjs/common';
import type { PageRequest } from '../common/pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgScopedReads } from '../database/org-scoped-reads';
import { upsertOrgRows } from '../database/org-scoped-upsert';
import { triggers } from '../database/triggers.table';
import type { TriggerViewRow } from './triggers.mapper';

export type NewTriggerRow = typeof triggers.$inferInsert;

const viewColumns = {
  id: triggers.id,
  agentId: triggers.agentId,
  connectorId: triggers.connectorId,
  connectorType: triggers.connectorType,
  event: triggers.event,
  isActive: triggers.isActive,
  conditions: triggers.conditions,
  settings: triggers.settings,
  schedule: triggers.schedule,
  createdAt: triggers.createdAt,
  updatedAt: triggers.updatedAt,
};

@Injectable()
export class TriggersRepository {
  private readonly reads;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.reads = orgScopedReads(txHost, triggers, { statementPrefix: 'triggers', columns: viewColumns });
  }

  findById(orgId: string, id: string): Promise<TriggerViewRow | null> {
    return this.reads.findById(orgId, id);
  }

  listPage(orgId: string, page: PageRequest): Promise<TriggerViewRow[]> {
    return this.reads.listPage(orgId, page);
  }

  /** Upsert by id, scoped to the org; returns the ids written. */
  upsertMany(orgId: string, rows: NewTriggerRow[]): Promise<string[]> {
    return upsertOrgRows(this.txHost.tx, triggers, orgId, rows, ['agentId', 'connectorId', 'connectorType', 'event', 'isActive', 'conditions', 'settings', 'schedule', 'webhookId', 'webhookStatus', 'deactivatedReason', 'deactivatedAt', 'createdAt', 'updatedAt']);
  }
}
