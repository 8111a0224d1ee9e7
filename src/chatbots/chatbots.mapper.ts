import type { chatbots } from '../database/chatbots.table';
import { iso } from '../common/iso';
import type { ChatbotDto } from './chatbots.dto';

type ChatbotRow = typeof chatbots.$inferSelect;
export type ChatbotViewRow = Omit<ChatbotRow, 'orgId' | 'deactivatedReason' | 'deactivatedAt'>;

/** Whitelisted: deactivated_reason/deactivated_at are internal agent-cascade bookkeeping. */
export function mapChatbot(row: ChatbotViewRow): ChatbotDto {
  return {
    id: row.id,
    public_id: row.publicId,
    name: row.name,
    agent_id: row.agentId,
    is_active: row.isActive,
    allow_write_tools: row.allowWriteTools,
    allowed_domains: row.allowedDomains,
    theme: row.theme ?? null,
    welcome_message: row.welcomeMessage,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}
