import { and, eq } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import * as schema from '../../src/database/schema';
import type { TestApp } from './test-app';

/**
 * Rows of the tables other modules own (connectors, triggers, chatbots,
 * sources, documents), written straight into the database: the agents tests
 * need them to exist, not the endpoints that manage them.
 */
export async function insertConnector(
  t: TestApp,
  orgId: string,
  values: Partial<typeof schema.connectors.$inferInsert> = {},
): Promise<typeof schema.connectors.$inferSelect> {
  const [row] = await t.connection.db
    .insert(schema.connectors)
    .values({ id: newId('connector'), orgId, type: 'zendesk', name: 'Zendesk', status: 'connected', ...values })
    .returning();
  return row;
}

export async function insertTrigger(
  t: TestApp,
  orgId: string,
  agentId: string | null,
  values: Partial<typeof schema.triggers.$inferInsert> = {},
): Promise<typeof schema.triggers.$inferSelect> {
  const [row] = await t.connection.db
    .insert(schema.triggers)
    .values({ id: newId('trigger'), orgId, agentId, connectorType: 'zendesk', event: 'ticket.created', isActive: true, ...values })
    .returning();
  return row;
}

export async function insertChatbot(
  t: TestApp,
  orgId: string,
  agentId: string | null,
  values: Partial<typeof schema.chatbots.$inferInsert> = {},
): Promise<typeof schema.chatbots.$inferSelect> {
  const id = newId('chatbot');
  const [row] = await t.connection.db
    .insert(schema.chatbots)
    .values({ id, orgId, publicId: `pub_${id.slice(-24)}`, name: 'Widget', agentId, isActive: true, ...values })
    .returning();
  return row;
}

export async function insertSource(
  t: TestApp,
  orgId: string,
  values: Partial<typeof schema.sources.$inferInsert> = {},
): Promise<typeof schema.sources.$inferSelect> {
  const [row] = await t.connection.db
    .insert(schema.sources)
    .values({ id: newId('source'), orgId, type: 'website', name: 'Docs site', ...values })
    .returning();
  return row;
}

export async function insertDocument(t: TestApp, orgId: string, sourceId: string): Promise<typeof schema.documents.$inferSelect> {
  const [row] = await t.connection.db.insert(schema.documents).values({ id: newId('document'), orgId, sourceId, name: 'page.html' }).returning();
  return row;
}

export async function readTrigger(t: TestApp, id: string): Promise<typeof schema.triggers.$inferSelect | undefined> {
  const [row] = await t.connection.db.select().from(schema.triggers).where(eq(schema.triggers.id, id));
  return row;
}

export async function readChatbot(t: TestApp, id: string): Promise<typeof schema.chatbots.$inferSelect | undefined> {
  const [row] = await t.connection.db.select().from(schema.chatbots).where(eq(schema.chatbots.id, id));
  return row;
}

/** The stored agent row, soft-deleted or not (the API never shows `deleted_at`). */
export async function readAgentRow(t: TestApp, orgId: string, id: string): Promise<typeof schema.agents.$inferSelect | undefined> {
  const [row] = await t.connection.db
    .select()
    .from(schema.agents)
    .where(and(eq(schema.agents.orgId, orgId), eq(schema.agents.id, id)));
  return row;
}

export async function setAgentDeletedAt(t: TestApp, id: string, deletedAt: Date | null): Promise<void> {
  await t.connection.db.update(schema.agents).set({ deletedAt }).where(eq(schema.agents.id, id));
}

export async function setConnectorStatus(t: TestApp, id: string, status: string): Promise<void> {
  await t.connection.db.update(schema.connectors).set({ status }).where(eq(schema.connectors.id, id));
}

/** Writes `sub_agents` directly, e.g. to point at agents that have since been trashed. */
export async function setSubAgents(t: TestApp, id: string, subAgents: string[]): Promise<void> {
  await t.connection.db.update(schema.agents).set({ subAgents }).where(eq(schema.agents.id, id));
}
