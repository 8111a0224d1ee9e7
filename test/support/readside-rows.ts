import { newId } from '../../libs/ids/ids';
import { ticketIdsOf } from '../../src/conversations/conversations.fixtures';
import type { Database } from '../../src/database/database.types';
import { agents } from '../../src/agents/agents.table';
import { chatbots } from '../../src/database/chatbots.table';
import { connectors } from '../../src/connectors/connectors.table';
import { conversations, messages } from '../../src/conversations/conversations.table';
import { triggers } from '../../src/database/triggers.table';
import { CHATBOT_ID } from '../../src/chatbots/chatbots.ids';
import { TRIGGER_ID } from '../../src/triggers/triggers.ids';

/**
 * Rows of the read-side tables written straight through Drizzle: the API
 * cannot create them (read-only resources), and the agents module is built in
 * parallel. Ids are generated in call order, so later rows sort newer.
 */

type ConversationInsert = typeof conversations.$inferInsert;
type MessageInsert = typeof messages.$inferInsert;

export async function insertAgent(db: Database, orgId: string, overrides: Partial<typeof agents.$inferInsert> = {}): Promise<string> {
  const id = overrides.id ?? newId('agent');
  await db.insert(agents).values({ handle: `agent-${id.slice(-8)}`, name: 'Test agent', ...overrides, id, orgId });
  return id;
}

export async function insertConversation(
  db: Database,
  orgId: string,
  overrides: Partial<ConversationInsert> = {},
  thread: Array<Partial<MessageInsert> & { role: string; content: string }> = [],
): Promise<string> {
  const id = overrides.id ?? newId('conversation');
  const source = overrides.source ?? 'dashboard';
  await db.insert(conversations).values({
    title: 'A conversation',
    conversationNumber: source === 'sub-agent' ? null : 1,
    ...overrides,
    id,
    orgId,
    source,
    ticketIds: ticketIdsOf(overrides.metadata, overrides.triggerPayload),
    messageCount: thread.length,
  });
  if (thread.length > 0) {
    await db.insert(messages).values(thread.map((message) => ({ id: newId('message'), ...message, orgId, conversationId: id })));
  }
  return id;
}

export async function insertConnector(db: Database, orgId: string, overrides: Partial<typeof connectors.$inferInsert> = {}): Promise<string> {
  const id = overrides.id ?? newId('connector');
  await db.insert(connectors).values({ type: 'zendesk', name: 'Zendesk', ...overrides, id, orgId });
  return id;
}

export async function insertTrigger(db: Database, orgId: string, overrides: Partial<typeof triggers.$inferInsert> = {}): Promise<string> {
  const id = overrides.id ?? newId(TRIGGER_ID);
  await db.insert(triggers).values({ connectorType: 'zendesk', event: 'ticket.created', ...overrides, id, orgId });
  return id;
}

export async function insertChatbot(db: Database, orgId: string, overrides: Partial<typeof chatbots.$inferInsert> = {}): Promise<string> {
  const id = overrides.id ?? newId(CHATBOT_ID);
  await db.insert(chatbots).values({ publicId: `cb_${id.slice(-24)}`, name: 'Help widget', ...overrides, id, orgId });
  return id;
}
