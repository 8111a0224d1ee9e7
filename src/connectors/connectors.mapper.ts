import type { connectors, ConnectorToolRow } from './connectors.table';
import { iso } from '../common/iso';
import type { ConnectorDetailDto, ConnectorSummaryDto, ConnectorToolDto } from './connectors.dto';

export type ConnectorRow = typeof connectors.$inferSelect;

export function mapConnectorSummary(row: Omit<ConnectorRow, 'tools' | 'orgId'>): ConnectorSummaryDto {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    status: row.status,
    status_reason: row.statusReason,
    is_active: row.isActive,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

/** Optional tool fields are omitted when unknown (the contract marks them optional, not nullable). */
function mapConnectorTool(tool: ConnectorToolRow): ConnectorToolDto {
  const dto: ConnectorToolDto = { name: tool.name };
  if (tool.label !== undefined) dto.label = tool.label;
  if (tool.description !== undefined) dto.description = tool.description;
  if (tool.type !== undefined) dto.type = tool.type;
  if (tool.requires_confirmation !== undefined) dto.requires_confirmation = tool.requires_confirmation;
  if (tool.disabled !== undefined) dto.disabled = tool.disabled;
  return dto;
}

export function mapConnectorDetail(row: ConnectorRow): ConnectorDetailDto {
  return { ...mapConnectorSummary(row), tools: row.tools.map(mapConnectorTool) };
}
