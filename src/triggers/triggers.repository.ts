import { Inject, Injectable } from '@nestjs/common';
import { eq, sql } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import { orgScopedReads } from '../database/org-scoped-reads';
import { triggers } from '../database/schema';
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

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.reads = orgScopedReads(db, triggers, 'triggers', { columns: viewColumns });
  }

  findById(orgId: string, id: string): Promise<TriggerViewRow | null> {
    return this.reads.findById(orgId, id);
  }

  listPage(orgId: string, page: PageRequest): Promise<TriggerViewRow[]> {
    return this.reads.listPage(orgId, page);
  }

  /** Upsert by id, scoped to the org; returns the ids written. */
  async upsertMany(orgId: string, rows: NewTriggerRow[], tx: DbOrTx = this.db): Promise<string[]> {
    if (rows.length === 0) return [];
    const result = await tx
      .insert(triggers)
      .values(rows.map((row) => ({ ...row, orgId })))
      .onConflictDoUpdate({
        target: triggers.id,
        set: {
          agentId: sql`excluded.agent_id`,
          connectorId: sql`excluded.connector_id`,
          connectorType: sql`excluded.connector_type`,
          event: sql`excluded.event`,
          isActive: sql`excluded.is_active`,
          conditions: sql`excluded.conditions`,
          settings: sql`excluded.settings`,
          schedule: sql`excluded.schedule`,
          webhookId: sql`excluded.webhook_id`,
          webhookStatus: sql`excluded.webhook_status`,
          createdAt: sql`excluded.created_at`,
          updatedAt: sql`excluded.updated_at`,
        },
        setWhere: eq(triggers.orgId, orgId),
      })
      .returning({ id: triggers.id });
    return result.map((row) => row.id);
  }
}
