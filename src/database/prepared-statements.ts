import type { Database } from './database.types';

/**
 * What a statement is run through: `TransactionHost` (src/database/transactions.ts),
 * whose `tx` is the open transaction or, outside one, the root database.
 */
export interface TransactionSource {
  readonly tx: Database;
  isTransactionActive(): boolean;
}

/** What running a drizzle query takes: its placeholders' values. */
interface Executable {
  execute(placeholderValues?: Record<string, unknown>): Promise<unknown>;
}

/** A drizzle query that can be prepared under a name (select, insert, update, delete), or run as built. */
interface PreparableQuery<Prepared extends Executable> {
  toSQL(): { sql: string };
  prepare(name: string): Prepared;
  execute: Prepared['execute'];
}

/** A statement built once: `execute(values)` runs it in the open transaction, if any. */
type Statement<Prepared extends Executable> = Pick<Prepared, 'execute'>;

/** Per database: the SQL each statement name was prepared with. */
const preparedNames = new WeakMap<Database, Map<string, string>>();

/**
 * A drizzle prepared statement belongs to the database it was built on, and
 * the root database runs outside any transaction. So the statement is
 * prepared there, for the work that runs on its own (most reads), and inside
 * an open transaction it is built on the transaction, for that one execution
 * (SQL built per call, as for any query written in place). Built at
 * construction, when no transaction is open.
 */
function transactionAware<Prepared extends Executable>(
  transactions: TransactionSource,
  build: (db: Database) => PreparableQuery<Prepared>,
  prepare: (root: Database, query: PreparableQuery<Prepared>) => Prepared,
): Statement<Prepared> {
  if (transactions.isTransactionActive()) throw new Error('prepare statements outside a transaction (a prepared statement runs on the root database)');
  const root = transactions.tx;
  const prepared = prepare(root, build(root));
  const execute = (values?: Record<string, unknown>) =>
    transactions.isTransactionActive() ? build(transactions.tx).execute(values) : prepared.execute(values);
  return { execute: execute as Prepared['execute'] };
}

/**
 * `query.prepare(name)`, once the name is known to be free. A statement name
 * belongs to the connection: a second statement under a name already
 * prepared there is refused by the driver on the first request that runs it,
 * far from the repository that chose the name. Every connection runs every
 * repository's statements, so a name must be unique across the database;
 * this checks it when the statement is built, at start-up. Preparing the same
 * SQL under the same name again (a second instance of a repository) is fine.
 */
export function prepareNamed<Prepared extends Executable>(
  transactions: TransactionSource,
  name: string,
  build: (db: Database) => PreparableQuery<Prepared>,
): Statement<Prepared> {
  return transactionAware(transactions, build, (root, query) => {
    let names = preparedNames.get(root);
    if (!names) preparedNames.set(root, (names = new Map()));
    const text = query.toSQL().sql;
    const earlier = names.get(name);
    if (earlier !== undefined && earlier !== text) {
      throw new Error(`the prepared statement name "${name}" is already used for another statement on this database; choose a name of its own`);
    }
    names.set(name, text);
    return query.prepare(name);
  });
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
export function prepareUnnamed<Prepared extends Executable>(
  transactions: TransactionSource,
  build: (db: Database) => PreparableQuery<Prepared>,
): Statement<Prepared> {
  return transactionAware(transactions, build, (_root, query) => query.prepare(UNNAMED_STATEMENT_NAME));
}
