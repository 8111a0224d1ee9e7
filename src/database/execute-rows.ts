import type { SQL } from 'drizzle-orm';
import type { Database } from './database.types';

/** The rows of a raw SQL statement (`db.execute`; `Database` types its result as both drivers document it). */
export async function executeRows<Row extends Record<string, unknown>>(db: Database, query: SQL): Promise<Row[]> {
  return (await db.execute<Row>(query)).rows;
}
