import type { sources } from '../database/sources.table';
import { iso } from '../common/iso';
import type { SourceDto } from './sources.dto';

export type SourceRow = typeof sources.$inferSelect;

/** Whitelisted response: the contract's Source fields only (`config` and `org_id` stay internal). */
export function mapSource(row: SourceRow): SourceDto {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    connector_id: row.connectorId,
    connector_type: row.connectorType,
    sync_status: row.syncStatus,
    last_sync_at: iso(row.lastSyncAt),
    document_count: row.documentCount,
    is_active: row.isActive,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}
