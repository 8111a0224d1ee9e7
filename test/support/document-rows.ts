import { eq } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import { documents } from '../../src/database/sources.table';
import type { TestApp } from './test-app';

/** Document rows written straight to the database, for the source cascade tests. */
export async function documentIdsOf(t: TestApp, sourceId: string): Promise<string[]> {
  const rows = await t.connection.db.select({ id: documents.id }).from(documents).where(eq(documents.sourceId, sourceId));
  return rows.map((row) => row.id);
}

export async function insertDocumentRows(t: TestApp, orgId: string, sourceId: string, names: string[]): Promise<string[]> {
  const rows = names.map((name) => ({ id: newId('document'), orgId, sourceId, name }));
  if (rows.length) await t.connection.db.insert(documents).values(rows);
  return rows.map((row) => row.id);
}
