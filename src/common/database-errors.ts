import { ApiError, ErrorCode } from './api-error';

/**
 * The one place database errors become API errors. Drizzle 0.45
 * wraps driver errors, so the PostgreSQL code is looked for on the error and
 * along its `cause` chain.
 */
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH', 'EAI_AGAIN']);
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error',
  // a timed-out query closes its connection (database/connection.ts): what follows on it fails with this
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end',
  'connection is closed',
  'PGlite is closed',
];

interface PgLikeError {
  code?: unknown;
  message?: unknown;
  constraint?: unknown;
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
    const message = typeof link.message === 'string' ? link.message : '';
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
      CONNECTION_MESSAGES.some((fragment) => message.includes(fragment))
    ) {
      return new ApiError(ErrorCode.ServiceUnavailable, 'The service is temporarily unavailable. Retry with backoff.', undefined, {
        'Retry-After': '1',
      });
    }
  }
  return null;
}

/** The unique constraint a 23505 error names, if any (for domain-specific 409 codes). */
export function uniqueViolationConstraint(error: unknown): string | null {
  for (const link of causeChain(error)) {
    if (link.code === '23505') return typeof link.constraint === 'string' ? link.constraint : '';
  }
  return null;
}
