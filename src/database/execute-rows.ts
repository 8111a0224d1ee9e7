import type { SQL } from 'drizzle-orm';
import type { Database } from './database.types';

/**
 * The rows of a raw SQL statement (`db.execute`). Its result is typed by the
 * driver's result kind, which the common `Database` type leaves open; both
 * drivers document that result as `{ rows }` (node-postgres' `QueryResult`,
 * PGlite's `Results`), and this is the one place that reads it so.
 */
export async function executeRows<Row>(db: Database, query: SQL): Promise<Row[]> {
  const result = (await db.execute(query)) as unknown as { rows: Row[] };
  return result.rows;
}
