import { HttpException } from '@nestjs/common';
import { ApiError, ErrorCode } from './api-error';
import { translateDatabaseError } from './database-errors';
import type { AppLogger } from './logger';

interface BodyParserError {
  type: string;
}

/**
 * body-parser marks its errors with a `type` (`entity.parse.failed`, …).
 * Nest 12's Express adapter wraps them in an HttpException (400/413) with the
 * original as `cause`, so the mark is looked for on the error and its cause.
 */
function bodyParserError(exception: unknown): BodyParserError | null {
  let current: unknown = exception;
  for (let depth = 0; depth < 3 && current !== null && typeof current === 'object'; depth++) {
    if (typeof (current as { type?: unknown }).type === 'string') return current as BodyParserError;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

export interface ErrorResponseBody {
  error: { code: string; message: string; request_id: string; details?: Record<string, unknown> };
}

/**
 * The spec's error envelope for one error. Shared by the exception filter and
 * the idempotency interceptor, which stores exactly what the filter sends.
 */
export function renderErrorBody(error: ApiError, requestId: string): ErrorResponseBody {
  const body: ErrorResponseBody = { error: { code: error.code, message: error.message, request_id: requestId } };
  if (error.details && Object.values(error.details).some((v) => v !== undefined)) body.error.details = error.details;
  return body;
}

/** Body-parser and Nest's own HTTP exceptions, as the API errors the spec names. */
export function frameworkApiError(exception: unknown): ApiError | null {
  const parserError = bodyParserError(exception);
  if (parserError) {
    // body-parser failures reach us before any route runs
    if (parserError.type === 'entity.too.large') {
      return new ApiError(ErrorCode.PayloadTooLarge, 'The request body exceeds 1 MiB.');
    }
    if (parserError.type === 'entity.parse.failed') {
      return ApiError.validation({ body: ['is not valid JSON'] }, 'The request body is not valid JSON.');
    }
    if (parserError.type === 'encoding.unsupported' || parserError.type === 'charset.unsupported') {
      return ApiError.validation({ body: ['has an unsupported encoding'] }, 'The request body encoding is not supported.');
    }
  }

  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status === 404) return new ApiError(ErrorCode.NotFound, 'No such endpoint.');
    if (status === 413) return new ApiError(ErrorCode.PayloadTooLarge, 'The request body exceeds 1 MiB.');
    if (status === 429) return new ApiError(ErrorCode.RateLimited, 'Rate limit exceeded.');
    // Express could not percent-decode a path segment: such a path names no resource
    if (status === 400 && exception.message.startsWith('Failed to decode param')) {
      return new ApiError(ErrorCode.NotFound, 'No resource has this path: it is not valid percent-encoding.');
    }
    if (status === 400 || status === 422) return ApiError.validation({}, 'The request is not valid.');
    if (status === 401) return new ApiError(ErrorCode.Unauthorized, 'A valid API key is required.');
    if (status === 403) return new ApiError(ErrorCode.InsufficientScope, 'The API key lacks the scope this endpoint needs.');
    if (status === 503) return new ApiError(ErrorCode.ServiceUnavailable, 'The service is temporarily unavailable.');
  }
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
 * (with the request id, never request data) and become 500 `internal_error`;
 * an unreachable database is logged as a warning and becomes 503. Used by the
 * exception filter and the hot-route dispatcher.
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

  logger.error({ request_id: requestId, err: summarizeError(exception) }, 'unhandled error');
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
