import { sql } from 'drizzle-orm';
import type { DatabaseConnection } from '../../src/database/connection';

/**
 * Every row of every table with an `org_id`, of one organization, as one
 * string: what a test compares before and after a request to tell whether
 * it changed anything, with no list of tables to keep (a new module's table
 * is in it the day it is migrated). `except` names tables the comparison
 * leaves out, for a reason the caller states.
 */
export async function orgRows(connection: DatabaseConnection, orgId: string, options: { except?: readonly string[] } = {}): Promise<string> {
  const tables = (await connection.db.execute(
    sql`select table_name from information_schema.columns where column_name = 'org_id' and table_schema = current_schema() order by table_name`,
  )) as unknown as { rows: Array<{ table_name: string }> };
  const dump: Record<string, unknown> = {};
  for (const { table_name } of tables.rows.filter((row) => !(options.except ?? []).includes(row.table_name))) {
    const rows = (await connection.db.execute(sql`select * from ${sql.identifier(table_name)} where org_id = ${orgId} order by 1`)) as unknown as { rows: unknown[] };
    dump[table_name] = rows.rows;
  }
  return JSON.stringify(dump);
}
