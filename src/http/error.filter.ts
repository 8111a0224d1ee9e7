import { ArgumentsHost, Catch, ExceptionFilter, Inject } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { apiErrorOrInternal, renderErrorBody } from './error-body';
import { LOGGER, type AppLogger } from '../common/logger';
import { Metrics } from '../metrics/metrics';
import { activeRequestContext, REQUEST_ID_HEADER, resolveRequestId } from '../common/request-context';

/** Renders every error, ours or the framework's, in the contract's error envelope. */
@Catch()
export class ErrorEnvelopeFilter implements ExceptionFilter {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(LOGGER) private readonly logger: AppLogger,
    private readonly metrics: Metrics,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse();
    const adapter = this.adapterHost.httpAdapter;
    const context = activeRequestContext();
    const requestId = context?.requestId ?? resolveRequestId(undefined);

    const error = apiErrorOrInternal(exception, this.logger, context?.tenantQueue, () => this.metrics.tenantQueueDeadline());
    adapter.setHeader(response, REQUEST_ID_HEADER, requestId);
    for (const [name, value] of Object.entries(error.headers ?? {})) adapter.setHeader(response, name, value);
    const body = renderErrorBody(error, requestId);
    adapter.reply(response, body, error.status);
  }
}
