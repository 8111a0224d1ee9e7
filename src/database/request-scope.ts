import { ClsServiceManager } from 'nestjs-cls';
import { activeRequestContext, type RequestStore } from '../common/request-context';
import type { Transaction } from './database.types';

/**
 * What the database layer reads of the work it is serving, from the one
 * request context (common/request-context.ts): the request's deadline, and
 * the transaction `DatabaseConnection.transaction` opened, if any. Work
 * outside a request (jobs, the CLI) has no deadline; its transactions open a
 * context of their own.
 */
export interface OpenTransaction {
  /** drizzle's transaction, once begun: a nested `transaction(...)` is its savepoint */
  tx: Transaction | null;
  /** the engine's connection the transaction runs on, once begun */
  connection: unknown;
  /** false once committed or rolled back: work that outlives it runs on the pool */
  open: boolean;
}

/** Where the open transaction is kept in the context: the database layer's own key. */
const TRANSACTION = Symbol('open database transaction');

/** The transaction open in the current context, if any. */
export function openTransaction(): OpenTransaction | null {
  const cls = ClsServiceManager.getClsService();
  const transaction = cls.isActive() ? (cls.get(TRANSACTION) as OpenTransaction | undefined) : undefined;
  return transaction?.open ? transaction : null;
}

/** Runs `fn` with `transaction` open: a child of the current context (the request's, if any), which it inherits. */
export function runInTransaction<T>(transaction: OpenTransaction, fn: () => T): T {
  const cls = ClsServiceManager.getClsService();
  return cls.run({ ifNested: 'inherit' }, () => {
    cls.set(TRANSACTION, transaction);
    return fn();
  });
}

/**
 * What a request's database work may take in all: the statement timeout plus
 * this margin, so that the whole request — pool wait, every statement, the
 * rollback — ends within the statement timeout plus one second whatever the
 * database does (docs/decisions.md, "Timeouts").
 */
const REQUEST_DATABASE_MARGIN_MS = 500;

/**
 * Starts the request's database budget from now: the HTTP layer calls it
 * for the key lookup before the body, then again once the body is read, for
 * the handler (one budget each).
 */
export function startDatabaseDeadline(context: RequestStore, statementTimeoutMs: number): void {
  context.databaseDeadline = Date.now() + statementTimeoutMs + REQUEST_DATABASE_MARGIN_MS;
}

/** The request's database deadline (epoch milliseconds), or null outside a request. */
export function databaseDeadline(): number | null {
  return activeRequestContext()?.databaseDeadline ?? null;
}

/** Milliseconds left before the request's deadline (never negative), or null without one. */
export function remainingMs(now = Date.now()): number | null {
  const deadline = databaseDeadline();
  return deadline === null ? null : Math.max(0, deadline - now);
}
