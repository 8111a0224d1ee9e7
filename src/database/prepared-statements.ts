import type { Database } from './database.types';

/** A drizzle query that can be prepared under a name (select, insert, update, delete). */
interface PreparableQuery<Prepared> {
  toSQL(): { sql: string };
  prepare(name: string): Prepared;
}

/** Per database: the SQL each statement name was prepared with. */
const preparedNames = new WeakMap<Database, Map<string, string>>();

/**
 * `query.prepare(name)`, once the name is known to be free. A statement name
 * belongs to the connection: a second statement under a name already
 * prepared there is refused by the driver on the first request that runs it,
 * far from the repository that chose the name. Every connection runs every
 * repository's statements, so a name must be unique across the database;
 * this checks it when the statement is built, at start-up. Preparing the same
 * SQL under the same name again (a second instance of a repository) is fine.
 */
export function prepareNamed<Prepared>(db: Database, name: string, query: PreparableQuery<Prepared>): Prepared {
  let names = preparedNames.get(db);
  if (!names) preparedNames.set(db, (names = new Map()));
  const text = query.toSQL().sql;
  const earlier = names.get(name);
  if (earlier !== undefined && earlier !== text) {
    throw new Error(`the prepared statement name "${name}" is already used for another statement on this database; choose a name of its own`);
  }
  names.set(name, text);
  return query.prepare(name);
}

/**
 * The name `prepareUnnamed` gives its statements. `Lease.query`
 * (pg-connections.ts) sends a statement of this name unnamed: PostgreSQL
 * parses and plans each execution with its values, as for a query built per
 * request, while the SQL text is built once here.
 */
export const UNNAMED_STATEMENT_NAME = 'unnamed (planned per execution)';

/**
 * `query.prepare` for a statement whose best plan depends on its values (a
 * generic plan, made once, would not serve them all): drizzle keeps the SQL
 * it built, and the server plans every execution anew. The embedded engine
 * runs every statement unnamed anyway.
 */
export function prepareUnnamed<Prepared>(query: PreparableQuery<Prepared>): Prepared {
  return query.prepare(UNNAMED_STATEMENT_NAME);
}
