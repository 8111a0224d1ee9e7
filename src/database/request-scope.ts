import { AsyncLocalStorage } from 'node:async_hooks';
import type { Transaction } from './database.types';

/**
 * What the database layer knows about the request it is serving, carried by
 * AsyncLocalStorage so that repositories need no extra argument:
 *
 * - `deadline`: every query of the request (pool wait included) ends by then,
 *   so a request is bounded whatever the database does;
 * - `transaction`: the transaction open in this request, if any — the request
 *   transaction of a keyed write (`DatabaseConnection.requestTransaction`) or
 *   a service's own `db.transaction(...)`. Every query issued meanwhile runs
 *   on its connection: queries on the root `db` and prepared statements built
 *   on it included, and a nested `db.transaction(...)` is a savepoint of it.
 *   So a repository called without its `tx` inside a transaction still joins
 *   it (on PGlite, with one connection, it would otherwise wait for it forever).
 */
export interface DatabaseScope {
  /** epoch milliseconds; null: only the per-query timeouts apply */
  readonly deadline: number | null;
  readonly transaction: RequestTransaction | null;
}

export interface RequestTransaction {
  /** the Drizzle transaction services' `db.transaction(...)` nests in */
  readonly tx: Transaction;
  /** the driver connection of `tx` (a node-postgres PoolClient or a PGlite transaction) */
  readonly client: unknown;
  /** false once committed or rolled back: work that outlives the request falls back to the pool */
  open: boolean;
}

const storage = new AsyncLocalStorage<DatabaseScope>();

export function currentScope(): DatabaseScope | undefined {
  return storage.getStore();
}

/** The open request transaction of the current request, if any. */
export function openRequestTransaction(): RequestTransaction | null {
  const transaction = storage.getStore()?.transaction;
  return transaction?.open ? transaction : null;
}

/**
 * What a request's database work may take in all: the statement timeout plus
 * this margin, so that the whole request — pool wait, every statement, the
 * rollback — ends within the statement timeout plus one second whatever the
 * database does (docs/decisions.md, "Timeouts").
 */
export const REQUEST_DATABASE_MARGIN_MS = 500;

/**
 * The database scope of a request from `startedAt` (its body read): the key
 * lookup of the authentication step and the handler share one budget.
 */
export function requestDatabaseScope(startedAt: number, statementTimeoutMs: number): DatabaseScope {
  return { deadline: startedAt + statementTimeoutMs + REQUEST_DATABASE_MARGIN_MS, transaction: null };
}

export function runInScope<T>(scope: DatabaseScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** Milliseconds left before the request's deadline (never negative), or null without one. */
export function remainingMs(now = Date.now()): number | null {
  const deadline = storage.getStore()?.deadline ?? null;
  return deadline === null ? null : Math.max(0, deadline - now);
}
