import { activeRequestContext, type RequestStore } from '../common/request-context';

/**
 * What the database layer reads of the work it is serving, from the one
 * request context (common/request-context.ts): the request's deadline. Work
 * outside a request (jobs, the CLI) has none. The open transaction is
 * `@nestjs-cls/transactional`'s (`TransactionHost.tx`, src/database/transactions.ts).
 */

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
