import { HttpException } from '@nestjs/common';
import { ApiError, ErrorCode } from './api-error';
import { databaseErrorState, translateDatabaseError } from './database-errors';
import type { AppLogger } from './logger';

/**
 * The HTTP status a framework error carries: Nest's HttpException, or the
 * `statusCode` that Node HTTP libraries (the router, http-errors) put on
 * theirs, e.g. 415 for a Content-Type header that does not parse.
 */
function frameworkStatus(exception: unknown): number | null {
  if (exception instanceof HttpException) return exception.getStatus();
  const status = (exception as { statusCode?: unknown } | null)?.statusCode;
  return exception instanceof Error && typeof status === 'number' && status >= 400 && status < 600 ? status : null;
}

export interface ErrorResponseBody {
  error: { code: string; message: string; request_id: string; details?: Record<string, unknown> };
}

/**
 * The contract's error envelope for one error. Shared by the exception filter and
 * the idempotency interceptor, which stores exactly what the filter sends.
 */
export function renderErrorBody(error: ApiError, requestId: string): ErrorResponseBody {
  const body: ErrorResponseBody = { error: { code: error.code, message: error.message, request_id: requestId } };
  if (error.details && Object.values(error.details).some((v) => v !== undefined)) body.error.details = error.details;
  return body;
}

/** Nest's own HTTP exceptions and the platform's, as the API errors the contract names. */
export function frameworkApiError(exception: unknown): ApiError | null {
  const status = frameworkStatus(exception);
  if (status === 404) return new ApiError(ErrorCode.NotFound, 'No such endpoint.');
  if (status === 413) return new ApiError(ErrorCode.PayloadTooLarge, 'The request body exceeds 1 MiB.');
  if (status === 429) return new ApiError(ErrorCode.RateLimited, 'Rate limit exceeded.');
  if (status === 400 || status === 415 || status === 422) return ApiError.validation({}, 'The request is not valid.');
  if (status === 401) return new ApiError(ErrorCode.Unauthorized, 'A valid API key is required.');
  if (status === 403) return new ApiError(ErrorCode.InsufficientScope, 'The API key lacks the scope this endpoint needs.');
  if (status === 503) return new ApiError(ErrorCode.ServiceUnavailable, 'The service is temporarily unavailable.');
  return null;
}

/**
 * The API error a thrown value is rendered as, or null when it is unexpected
 * (the filter logs it and answers 500 `internal_error`). Pure: it never logs.
 */
export function knownApiError(exception: unknown): ApiError | null {
  if (exception instanceof ApiError) return exception;
  return frameworkApiError(exception) ?? translateDatabaseError(exception);
}

/**
 * The API error a thrown value is answered with. Unexpected errors are logged
 * (with the request id, never request data) and become 500 `internal_error`
 * (a database error as such, with its SQLSTATE); an unreachable database, or
 * one that asks for a retry, is logged as a warning and becomes 503. Used by the
 * exception filter.
 */
export function resolveApiError(exception: unknown, requestId: string, logger: AppLogger): ApiError {
  if (exception instanceof ApiError) return exception;

  const framework = frameworkApiError(exception);
  if (framework) return framework;

  const translated = translateDatabaseError(exception);
  if (translated) {
    if (translated.code === ErrorCode.ServiceUnavailable) {
      logger.warn({ request_id: requestId, err: summarizeError(exception) }, 'database unavailable');
    }
    return translated;
  }

  // a database error with no answer of its own: still a 500, but named as the database's, with its SQLSTATE
  const sqlstate = databaseErrorState(exception);
  if (sqlstate) logger.error({ request_id: requestId, sqlstate, err: summarizeError(exception) }, 'database error');
  else logger.error({ request_id: requestId, err: summarizeError(exception) }, 'unhandled error');
  return new ApiError(ErrorCode.InternalError, 'An unexpected error occurred.');
}

/** Message, code and stack only: never request data that might carry a secret. */
export function summarizeError(exception: unknown): Record<string, unknown> {
  if (exception instanceof Error) {
    // Drizzle's query errors carry the SQL parameters in their message: those
    // may be secrets (ciphertexts, hashes, request data), so only the cause is kept.
    const carriesParams = 'params' in exception;
    return {
      name: exception.name,
      message: carriesParams ? 'database query failed' : exception.message,
      code: (exception as { code?: unknown }).code,
      stack: carriesParams ? undefined : exception.stack,
      cause: exception.cause instanceof Error ? { message: exception.cause.message, code: (exception.cause as { code?: unknown }).code } : undefined,
    };
  }
  return { value: String(exception) };
}
