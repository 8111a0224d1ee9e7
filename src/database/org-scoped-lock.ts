import { and, eq } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { Database } from './database.types';
import type { OrgScopedTable } from './org-scoped-reads';

/**
 * Row-locks one row of the organization for a read-modify-write
 * (`select … for update`, inside the caller's transaction): concurrent
 * writers of that row run one after the other. For repositories only (they
 * own the SQL). null when the organization has no such row.
 */
export async function lockOrgRow<T extends OrgScopedTable>(db: Database, table: T, orgId: string, id: string): Promise<T['$inferSelect'] | null> {
  const [row] = await db
    .select()
    .from(table as PgTable)
    .where(and(eq(table.orgId, orgId), eq(table.id, id)))
    .for('update');
  return (row as T['$inferSelect'] | undefined) ?? null;
}
