import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Inject } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiError, ErrorCode } from './api-error';
import { translateDatabaseError } from './database-errors';
import { LOGGER, type AppLogger } from './logger';
import { REQUEST_ID_HEADER, resolveRequestId, type RequestContext } from './request-context';

interface BodyParserError {
  type?: unknown;
  status?: unknown;
  statusCode?: unknown;
}

/** Renders every error, ours or the framework's, in the spec's error envelope. */
@Catch()
export class ErrorEnvelopeFilter implements ExceptionFilter {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<RequestContext>();
    const response = http.getResponse();
    const adapter = this.adapterHost.httpAdapter;
    const requestId = request.requestId ?? resolveRequestId(undefined);

    const error = this.toApiError(exception, requestId);
    adapter.setHeader(response, REQUEST_ID_HEADER, requestId);
    for (const [name, value] of Object.entries(error.headers ?? {})) adapter.setHeader(response, name, value);
    const body: { error: Record<string, unknown> } = {
      error: { code: error.code, message: error.message, request_id: requestId },
    };
    if (error.details && Object.values(error.details).some((v) => v !== undefined)) body.error.details = error.details;
    adapter.reply(response, body, error.status);
  }

  private toApiError(exception: unknown, requestId: string): ApiError {
    if (exception instanceof ApiError) return exception;

    const parserError = exception as BodyParserError;
    if (parserError && typeof parserError === 'object' && typeof parserError.type === 'string') {
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

    const translated = translateDatabaseError(exception);
    if (translated) {
      if (translated.code === ErrorCode.ServiceUnavailable) {
        this.logger.warn({ request_id: requestId, err: summarize(exception) }, 'database unavailable');
      }
      return translated;
    }

    this.logger.error({ request_id: requestId, err: summarize(exception) }, 'unhandled error');
    return new ApiError(ErrorCode.InternalError, 'An unexpected error occurred.');
  }
}

/** Message, code and stack only: never request data that might carry a secret. */
function summarize(exception: unknown): Record<string, unknown> {
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
