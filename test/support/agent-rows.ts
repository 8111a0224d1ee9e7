import { and, eq } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import { agents } from '../../src/agents/agents.table';
import { chatbots } from '../../src/database/chatbots.table';
import { connectors } from '../../src/connectors/connectors.table';
import { sources } from '../../src/database/sources.table';
import { documents } from '../../src/database/sources.table';
import { triggers } from '../../src/database/triggers.table';
import type { TestApp } from './test-app';
import { CHATBOT_ID } from '../../src/chatbots/chatbots.ids';
import { TRIGGER_ID } from '../../src/triggers/triggers.ids';

/**
 * Rows of the tables other modules own (connectors, triggers, chatbots,
 * sources, documents), written straight into the database: the agents tests
 * need them to exist, not the endpoints that manage them.
 */
export async function insertConnector(
  t: TestApp,
  orgId: string,
  values: Partial<typeof connectors.$inferInsert> = {},
): Promise<typeof connectors.$inferSelect> {
  const [row] = await t.connection.db
    .insert(connectors)
    .values({ id: newId('connector'), orgId, type: 'zendesk', name: 'Zendesk', status: 'connected', ...values })
    .returning();
  return row;
}

export async function insertTrigger(
  t: TestApp,
  orgId: string,
  agentId: string | null,
  values: Partial<typeof triggers.$inferInsert> = {},
): Promise<typeof triggers.$inferSelect> {
  const [row] = await t.connection.db
    .insert(triggers)
    .values({ id: newId(TRIGGER_ID), orgId, agentId, connectorType: 'zendesk', event: 'ticket.created', isActive: true, ...values })
    .returning();
  return row;
}

export async function insertChatbot(
  t: TestApp,
  orgId: string,
  agentId: string | null,
  values: Partial<typeof chatbots.$inferInsert> = {},
): Promise<typeof chatbots.$inferSelect> {
  const id = newId(CHATBOT_ID);
  const [row] = await t.connection.db
    .insert(chatbots)
    .values({ id, orgId, publicId: `pub_${id.slice(-24)}`, name: 'Widget', agentId, isActive: true, ...values })
    .returning();
  return row;
}

export async function insertSource(
  t: TestApp,
  orgId: string,
  values: Partial<typeof sources.$inferInsert> = {},
): Promise<typeof sources.$inferSelect> {
  const [row] = await t.connection.db
    .insert(sources)
    .values({ id: newId('source'), orgId, type: 'website', name: 'Docs site', ...values })
    .returning();
  return row;
}

export async function insertDocument(t: TestApp, orgId: string, sourceId: string): Promise<typeof documents.$inferSelect> {
  const [row] = await t.connection.db.insert(documents).values({ id: newId('document'), orgId, sourceId, name: 'page.html' }).returning();
  return row;
}

export async function readTrigger(t: TestApp, id: string): Promise<typeof triggers.$inferSelect | undefined> {
  const [row] = await t.connection.db.select().from(triggers).where(eq(triggers.id, id));
  return row;
}

export async function readChatbot(t: TestApp, id: string): Promise<typeof chatbots.$inferSelect | undefined> {
  const [row] = await t.connection.db.select().from(chatbots).where(eq(chatbots.id, id));
  return row;
}

/** The stored agent row, soft-deleted or not (the API never shows `deleted_at`). */
export async function readAgentRow(t: TestApp, orgId: string, id: string): Promise<typeof agents.$inferSelect | undefined> {
  const [row] = await t.connection.db
    .select()
    .from(agents)
    .where(and(eq(agents.orgId, orgId), eq(agents.id, id)));
  return row;
}

export async function setAgentDeletedAt(t: TestApp, id: string, deletedAt: Date | null): Promise<void> {
  await t.connection.db.update(agents).set({ deletedAt }).where(eq(agents.id, id));
}

export async function setConnectorStatus(t: TestApp, id: string, status: string): Promise<void> {
  await t.connection.db.update(connectors).set({ status }).where(eq(connectors.id, id));
}

/** Writes `sub_agents` directly, e.g. to point at agents that have since been trashed. */
export async function setSubAgents(t: TestApp, id: string, subAgents: string[]): Promise<void> {
  await t.connection.db.update(agents).set({ subAgents }).where(eq(agents.id, id));
}
