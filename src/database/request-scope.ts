import { AsyncLocalStorage } from 'node:async_hooks';
import type { Transaction } from './database.types';

/**
 * What the database layer knows about the work it is serving, carried by
 * AsyncLocalStorage so that repositories need no extra argument. This is the
 * only place it is kept; `DatabaseConnection` is the only writer.
 *
 * - `deadline`: every query of the request (pool wait included) ends by then,
 *   so a request is bounded whatever the database does;
 * - `transaction`: the transaction `DatabaseConnection.transaction` opened,
 *   if any. Every query on the injected database meanwhile runs on its
 *   connection, and a further `transaction(...)` is a savepoint of it.
 */
interface DatabaseScope {
  /** epoch milliseconds; null: only the per-query bound applies */
  readonly deadline: number | null;
  readonly transaction: OpenTransaction | null;
}

export interface OpenTransaction {
  /** drizzle's transaction, once begun: a nested `transaction(...)` is its savepoint */
  tx: Transaction | null;
  /** the engine's connection the transaction runs on, once begun */
  connection: unknown;
  /** false once committed or rolled back: work that outlives it runs on the pool */
  open: boolean;
}

const storage = new AsyncLocalStorage<DatabaseScope>();

export function currentScope(): DatabaseScope | undefined {
  return storage.getStore();
}

/** The transaction open in the current context, if any. */
export function openTransaction(): OpenTransaction | null {
  const transaction = storage.getStore()?.transaction;
  return transaction?.open ? transaction : null;
}

/**
 * What a request's database work may take in all: the statement timeout plus
 * this margin, so that the whole request — pool wait, every statement, the
 * rollback — ends within the statement timeout plus one second whatever the
 * database does (docs/decisions.md, "Timeouts").
 */
const REQUEST_DATABASE_MARGIN_MS = 500;

/**
 * The database scope of a request from `startedAt`: from its body read for
 * the handler, from its headers for the key lookup before the body (one
 * budget each).
 */
function requestDatabaseScope(startedAt: number, statementTimeoutMs: number): DatabaseScope {
  return { deadline: startedAt + statementTimeoutMs + REQUEST_DATABASE_MARGIN_MS, transaction: null };
}

/**
 * What the HTTP layer calls once per request, when its body has been read:
 * runs `fn` (the rest of the pipeline) under the request's database deadline.
 */
export function runWithRequestDeadline<T>(statementTimeoutMs: number, fn: () => T): T {
  return storage.run(requestDatabaseScope(Date.now(), statementTimeoutMs), fn);
}

export function runInScope<T>(scope: DatabaseScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** Milliseconds left before the request's deadline (never negative), or null without one. */
export function remainingMs(now = Date.now()): number | null {
  const deadline = storage.getStore()?.deadline ?? null;
  return deadline === null ? null : Math.max(0, deadline - now);
}
