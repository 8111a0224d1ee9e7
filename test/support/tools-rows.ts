import { eq } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import { agents, documents, type DataSourceRefRow, type ToolRefRow } from '../../src/database/schema';
import type { TestApp } from './test-app';

/**
 * Agent rows written straight to the database, for the cascade tests of
 * custom tools and sources (they must not depend on the agents module).
 */
export async function insertAgentRow(
  t: TestApp,
  orgId: string,
  options: { tools?: ToolRefRow[]; dataSources?: DataSourceRefRow[]; deletedAt?: Date | null } = {},
): Promise<string> {
  const id = newId('agent');
  await t.connection.db.insert(agents).values({
    id,
    orgId,
    handle: `agent${id.slice(-8)}`,
    name: `Agent ${id.slice(-4)}`,
    tools: options.tools ?? [],
    dataSources: options.dataSources ?? [],
    deletedAt: options.deletedAt ?? null,
  });
  return id;
}

export async function readAgentRow(t: TestApp, id: string) {
  const [row] = await t.connection.db.select().from(agents).where(eq(agents.id, id));
  return row;
}

export async function documentIdsOf(t: TestApp, sourceId: string): Promise<string[]> {
  const rows = await t.connection.db.select({ id: documents.id }).from(documents).where(eq(documents.sourceId, sourceId));
  return rows.map((row) => row.id);
}

export async function insertDocumentRows(t: TestApp, orgId: string, sourceId: string, names: string[]): Promise<string[]> {
  const rows = names.map((name) => ({ id: newId('document'), orgId, sourceId, name }));
  if (rows.length) await t.connection.db.insert(documents).values(rows);
  return rows.map((row) => row.id);
}
