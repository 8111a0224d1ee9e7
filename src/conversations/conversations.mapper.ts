import { iso } from '../common/iso';
import type { ConversationDetailDto, ConversationSummaryDto, MessageDto } from './conversations.dto';
import type { ConversationSummaryRow, MessageViewRow } from './conversations.repository';

/** Whitelisted response: org_id, ticket_ids and the payload never leak by accident. */
export function mapConversationSummary(row: ConversationSummaryRow): ConversationSummaryDto {
  return {
    id: row.id,
    title: row.title,
    source: row.source,
    agent_id: row.agentId,
    model: row.model,
    autonomous: row.autonomous,
    is_onboarding: row.isOnboarding,
    is_simulation: row.isSimulation,
    conversation_number: row.conversationNumber,
    parent_conversation_id: row.parentConversationId,
    credits_used: row.creditsUsed,
    metadata: row.metadata ?? null,
    // null in list responses; the real count in the detail
    message_count: null,
    last_message_at: iso(row.lastMessageAt),
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

export function mapMessage(row: MessageViewRow): MessageDto {
  return {
    id: row.id,
    role: row.role,
    content: row.content,
    tool_calls: row.toolCalls
      ? row.toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments, status: call.status ?? null }))
      : null,
    tool_call_id: row.toolCallId,
    tool_name: row.toolName,
    connector_type: row.connectorType,
    model: row.model,
    created_at: iso(row.createdAt),
  };
}

export function mapConversationDetail(
  row: ConversationSummaryRow & { triggerPayload?: unknown },
  thread: MessageViewRow[],
  includeTriggerPayload: boolean,
): ConversationDetailDto {
  const detail: ConversationDetailDto = {
    ...mapConversationSummary(row),
    message_count: thread.length,
    messages: thread.map(mapMessage),
  };
  // present only with include_trigger_payload=true|1 (it can hold customer personal data)
  if (includeTriggerPayload) detail.trigger_payload = row.triggerPayload ?? null;
  return detail;
}
