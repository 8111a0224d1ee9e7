import { ApiError, ErrorCode } from '../common/api-error';

/**
 * The one place database errors are classified, whichever engine: as the
 * API error they are answered with, by SQLSTATE (logs, metrics), as a lost
 * connection (the pool), as a unique violation (domain 409s). Drizzle 0.45
 * wraps driver errors, so the PostgreSQL code is looked for on the error and
 * along its `cause` chain.
 */

/**
 * Connection failures are told by their code alone: the socket's errno, a
 * SQLSTATE of class 08 or 57P, or the code the database layer gives the
 * failures it detects itself (ETIMEDOUT past the deadline, 08006 when the
 * connection was lost, 08003 on a closed embedded database).
 */
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH', 'EAI_AGAIN']);

/**
 * Errors of the moment or of a connection's state, never of the request, so a
 * retry may succeed: class 40 (serialization failure, deadlock), 55P03 (a lock
 * not available), and the two a connection's prepared statements raise when
 * a pooler hands the service a server connection it did not expect: 26000
 * (no such prepared statement) and 42P05 (one by that name already exists).
 */
const RETRYABLE_STATES = /^(40[0-9A-Z]{3}|55P03|26000|42P05)$/;

/** A PostgreSQL SQLSTATE: five digits or upper-case letters (on a server's error, which also has a severity; EPERM has no severity). */
const SQLSTATE = /^[0-9A-Z]{5}$/;

interface PgLikeError {
  code?: unknown;
  message?: unknown;
  constraint?: unknown;
  severity?: unknown;
  cause?: unknown;
}

function* causeChain(error: unknown): Generator<PgLikeError> {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    yield current as PgLikeError;
    current = (current as PgLikeError).cause;
  }
}

export function translateDatabaseError(error: unknown): ApiError | null {
  for (const link of causeChain(error)) {
    const code = typeof link.code === 'string' ? link.code : '';
    if (code === '23505') {
      return new ApiError(ErrorCode.Conflict, 'The request conflicts with an existing resource.', {
        constraint: typeof link.constraint === 'string' ? link.constraint : undefined,
      });
    }
    // class 22 (data exception: a NUL byte, an invalid byte sequence, a bad escape, a value out of
    // range...) and 54000 (a value too large for an index) are the client's data, never a 500
    if (code === '23503' || code === '23502' || code === '23514' || /^22[0-9A-Z]{3}$/.test(code) || code === '54000') {
      return new ApiError(ErrorCode.ValidationFailed, 'The request refers to data that is missing or not valid.');
    }
    if (
      CONNECTION_ERRNOS.has(code) ||
      code.startsWith('08') ||
      code === '57P01' ||
      code === '57P02' ||
      code === '57P03' ||
      code === '57014' ||
      code === '53300' ||
      RETRYABLE_STATES.test(code)
    ) {
      return new ApiError(ErrorCode.ServiceUnavailable, 'The service is temporarily unavailable. Retry with backoff.', undefined, {
        'Retry-After': '1',
      });
    }
  }
  return null;
}

/**
 * The SQLSTATE of a database error the service has no answer for (a bug of
 * ours, or the server's): the filter logs it as a database error, with this
 * code, rather than as an unexpected exception. Null when it is no database error.
 */
export function databaseErrorState(error: unknown): string | null {
  for (const link of causeChain(error)) {
    if (typeof link.code === 'string' && SQLSTATE.test(link.code) && typeof link.severity === 'string') return link.code;
  }
  return null;
}

/** The SQLSTATE class (its first two characters) of a failed query, for metrics; "none" without one. */
export function sqlstateClass(error: unknown): string {
  for (const link of causeChain(error)) {
    if (typeof link.code === 'string' && SQLSTATE.test(link.code)) return link.code.slice(0, 2);
  }
  // connection refused or lost, client-side timeout: the driver's errors carry no SQLSTATE
  return 'none';
}

/**
 * The request's database deadline passed (the database layer's own
 * ETIMEDOUT: no connection in time, or a statement cut or not sent), found
 * along the cause chain, since drizzle wraps it in its query error.
 */
export function isDeadlinePassed(error: unknown): boolean {
  for (const link of causeChain(error)) if (link.code === 'ETIMEDOUT') return true;
  return false;
}

/**
 * A driver's answer that says the connection was gone when the statement
 * reached it: the server terminated the backend (57P01 admin shutdown, 57P02
 * crash shutdown), a connection-failure SQLSTATE (class 08), or the socket
 * was reset or closed under the write (ECONNRESET, EPIPE).
 */
export function isLostConnection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code === '57P01' || code === '57P02' || code === 'ECONNRESET' || code === 'EPIPE' || code.startsWith('08');
}

/** The unique constraint a 23505 error names, if any (for domain-specific 409 codes). */
export function uniqueViolationConstraint(error: unknown): string | null {
  for (const link of causeChain(error)) {
    if (link.code === '23505') return typeof link.constraint === 'string' ? link.constraint : '';
  }
  return null;
}
