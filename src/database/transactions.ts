import type { TransactionalAdapter } from '@nestjs-cls/transactional';
import { DatabaseConnection } from './connection';
import type { Database, Transaction } from './database.types';

/** Transactions take no options: isolation and access mode are PostgreSQL's defaults everywhere. */
type NoOptions = Record<string, never>;

/**
 * `@nestjs-cls/transactional`'s adapter for our database: a transaction is
 * `DatabaseConnection.transaction` (on PostgreSQL: the request's deadline,
 * BEGIN retried on a dead idle connection, the work run again when its
 * connection died after BEGIN only, a broken connection destroyed), and a
 * nested one is a savepoint of the open transaction (drizzle's documented
 * `tx.transaction`). The stock Drizzle adapter begins with the root
 * database's own `transaction`, which has none of that (docs/decisions.md,
 * "Transactions you can see").
 */
export class DatabaseTransactions implements TransactionalAdapter<DatabaseConnection, Database, NoOptions> {
  readonly connectionToken = DatabaseConnection;
  // `@InjectTransaction()` would be a second way to reach the transaction: `txHost.tx` is the one
  readonly supportsTransactionProxy = false;

  optionsFactory(connection: DatabaseConnection) {
    return {
      // called again when DatabaseConnection runs the work again on another connection: `tx` is that attempt's
      wrapWithTransaction: (_options: NoOptions, fn: () => Promise<unknown>, setTx: (tx?: Database) => void) =>
        connection.transaction(async (tx) => {
          setTx(tx);
          try {
            return await fn();
          } finally {
            // work that outlives the callback (not awaited) runs on its own, never on a committed transaction
            setTx(undefined);
          }
        }),
      wrapWithNestedTransaction: (_options: NoOptions, fn: () => Promise<unknown>, setTx: (tx?: Database) => void, tx: Database) =>
        (tx as Transaction).transaction(async (savepoint) => {
          setTx(savepoint);
          return fn();
        }),
      getFallbackInstance: () => connection.db,
    };
  }
}
