import { eq, getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { Database } from './database.types';
import type { OrgScopedTable } from './org-scoped-reads';

/**
 * Fixture upserts by id, written once. For repositories only (they own the
 * SQL). An id that exists in another organization is left untouched (the
 * update's `where org_id = $orgId` fails), and so is missing from the ids
 * returned: the caller tells such a row apart by its absence.
 */
export async function upsertOrgRows<T extends OrgScopedTable>(
  db: Database,
  table: T,
  orgId: string,
  rows: Array<T['$inferInsert']>,
  /** the columns an existing row takes from the new one (the rest keep their stored values) */
  update: ReadonlyArray<keyof T['_']['columns'] & string>,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const columns = getTableColumns(table as PgTable);
  const set: Record<string, SQL> = {};
  for (const key of update) set[key] = sql`excluded.${sql.identifier(columns[key].name)}`;
  const written = await db
    .insert(table as PgTable)
    .values(rows.map((row) => ({ ...row, orgId })))
    .onConflictDoUpdate({ target: table.id, set, setWhere: eq(table.orgId, orgId) })
    .returning({ id: table.id });
  return written.map((row) => row.id as string);
}

/**
 * Fixture upsert of one row by id: an existing row of the organization takes
 * every column the new one gives (all but `id` and `org_id`, or `set` when
 * passed); a row of another organization is left untouched, and the result
 * is then false.
 */
export async function upsertOrgRow<T extends OrgScopedTable>(
  db: Database,
  table: T,
  orgId: string,
  row: T['$inferInsert'],
  set?: Record<string, unknown>,
): Promise<boolean> {
  const { id: _id, orgId: _org, ...changes } = row as Record<string, unknown>;
  const written = await db
    .insert(table as PgTable)
    .values({ ...row, orgId })
    .onConflictDoUpdate({ target: table.id, set: set ?? changes, setWhere: eq(table.orgId, orgId) })
    .returning({ id: table.id });
  return written.length > 0;
}

/** `upsertOrgRow` for several rows: the ids written (another organization's ids are missing). */
export async function upsertOrgRowsOneByOne<T extends OrgScopedTable>(
  db: Database,
  table: T,
  orgId: string,
  rows: Array<T['$inferInsert']>,
): Promise<string[]> {
  const written: string[] = [];
  for (const row of rows) if (await upsertOrgRow(db, table, orgId, row)) written.push((row as { id: string }).id);
  return written;
}
