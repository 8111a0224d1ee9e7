import { ArgumentsHost, Catch, ExceptionFilter, Inject } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiError, ErrorCode } from './api-error';
import { translateDatabaseError } from './database-errors';
import { frameworkApiError, renderErrorBody, summarizeError } from './error-body';
import { LOGGER, type AppLogger } from './logger';
import { REQUEST_ID_HEADER, resolveRequestId, type RequestContext } from './request-context';

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
    const body = renderErrorBody(error, requestId);
    adapter.reply(response, body, error.status);
  }

  private toApiError(exception: unknown, requestId: string): ApiError {
    if (exception instanceof ApiError) return exception;

    const framework = frameworkApiError(exception);
    if (framework) return framework;

    const translated = translateDatabaseError(exception);
    if (translated) {
      if (translated.code === ErrorCode.ServiceUnavailable) {
        this.logger.warn({ request_id: requestId, err: summarizeError(exception) }, 'database unavailable');
      }
      return translated;
    }

    this.logger.error({ request_id: requestId, err: summarizeError(exception) }, 'unhandled error');
    return new ApiError(ErrorCode.InternalError, 'An unexpected error occurred.');
  }
}
