import type { ExtractTablesWithRelations } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';

/**
 * No schema: relational queries are not used, every statement names its
 * tables, and each table lives in its module's folder (`*.table.ts`).
 */
type Schema = Record<string, never>;

/**
 * What a raw statement (`db.execute`) returns on both drivers: node-postgres'
 * `QueryResult` and PGlite's `Results` are each documented as `{ rows, … }`.
 * Drizzle types a driver's result through such a result kind (its own
 * drivers declare theirs the same way); this one is the part the two share.
 */
interface RowsResult<Row> {
  rows: Row[];
}
interface RowsResultHKT extends PgQueryResultHKT {
  readonly type: RowsResult<this['row']>;
}

/** The common type of the PGlite and node-postgres Drizzle databases. */
export type Database = PgDatabase<RowsResultHKT, Schema>;
export type Transaction = PgTransaction<RowsResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
