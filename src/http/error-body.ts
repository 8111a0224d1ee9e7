import { HttpException } from '@nestjs/common';
import { ApiError, ErrorCode } from '../common/api-error';
import { databaseErrorState, isDeadlinePassed, translateDatabaseError } from '../database/database-errors';
import { loggableError, warnRepeated, type AppLogger } from '../common/logger';
import type { RequestStore } from '../common/request-context';

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

interface ErrorResponseBody {
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
function frameworkExceptionAsApiError(exception: unknown): ApiError | null {
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

/** An expected error as its API error, with where it came from (the filter logs a database outage). */
function classify(exception: unknown): { error: ApiError; from: 'api' | 'framework' | 'database' } | null {
  if (exception instanceof ApiError) return { error: exception, from: 'api' };
  const framework = frameworkExceptionAsApiError(exception);
  if (framework) return { error: framework, from: 'framework' };
  const database = translateDatabaseError(exception);
  return database ? { error: database, from: 'database' } : null;
}

/**
 * The one way a thrown value becomes an API error: an `ApiError` as it is,
 * the framework's HTTP exceptions and database errors translated; null for
 * an unexpected error (a bug). Pure: it never logs.
 */
export function apiErrorOf(exception: unknown): ApiError | null {
  return classify(exception)?.error ?? null;
}

/**
 * A request whose database deadline passed (ETIMEDOUT, the database
 * layer's own code, on the error or wrapped in drizzle's) after it had waited longer in its tenant's queue than
 * it has spent since: the tenant's own flood used the time, not the database.
 */
function spentInTenantQueue(exception: unknown, tenantQueue: RequestStore['tenantQueue']): boolean {
  return tenantQueue !== undefined && isDeadlinePassed(exception) && tenantQueue.waitedMs >= Date.now() - tenantQueue.until;
}

/**
 * `apiErrorOf`, or 500 `internal_error` for an unexpected error: what the
 * exception filter answers. It logs what an operator must see, with the
 * request id and never request data: an unexpected error (a database error
 * as such, with its SQLSTATE), and as a warning a database that is
 * unreachable or asks for a retry (503).
 */
export function apiErrorOrInternal(
  exception: unknown,
  logger: AppLogger,
  tenantQueue?: RequestStore['tenantQueue'],
  onTenantQueueDeadline?: () => void,
): ApiError {
  const expected = classify(exception);
  if (expected) {
    if (expected.from === 'database' && expected.error.code === ErrorCode.ServiceUnavailable) {
      if (spentInTenantQueue(exception, tenantQueue)) {
        onTenantQueueDeadline?.();
        warnRepeated(
          logger,
          { queued_ms: tenantQueue!.waitedMs },
          "request deadline spent waiting in its tenant's queue (the tenant's own requests in progress), not on the database",
        );
      } else {
        warnRepeated(logger, { err: loggableError(exception) }, 'database unavailable');
      }
    }
    return expected.error;
  }
  // a database error with no answer of its own: still a 500, but named as the database's, with its SQLSTATE
  const sqlstate = databaseErrorState(exception);
  if (sqlstate) logger.error({ sqlstate, err: loggableError(exception) }, 'database error');
  else logger.error({ err: loggableError(exception) }, 'unhandled error');
  return new ApiError(ErrorCode.InternalError, 'An unexpected error occurred.');
}
