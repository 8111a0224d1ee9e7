import type { agents } from './agents.table';
import { iso } from '../common/iso';
import type { AgentDto } from './agents.dto';

export type AgentRow = typeof agents.$inferSelect;

/**
 * Whitelisted response, field by field: `org_id` and
 * `deleted_at` never leave the service. The counts are derived from the
 * stored arrays, never stored separately, so they cannot drift.
 */
export function mapAgent(row: AgentRow): AgentDto {
  return {
    id: row.id,
    handle: row.handle,
    name: row.name,
    description: row.description,
    model: row.model,
    is_active: row.isActive,
    color: row.color,
    avatar: row.avatar,
    tools_count: row.tools.length,
    sub_agents_count: row.subAgents.length,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    instructions: row.instructions,
    instructions_html: row.instructionsHtml,
    include_system_prompt: row.includeSystemPrompt,
    tools: row.tools.map((tool) => ({ name: tool.name, connector_id: tool.connector_id ?? null })),
    connectors: [...row.connectors],
    sub_agents: [...row.subAgents],
    data_sources: row.dataSources.map((ref) => ({
      source_id: ref.source_id,
      scope: ref.scope,
      ...(ref.documents ? { documents: [...ref.documents] } : {}),
    })),
    pending_trigger_hint: row.pendingTriggerHint ?? null,
    deactivated_reason: row.deactivatedReason,
    deactivated_at: iso(row.deactivatedAt),
  };
}
