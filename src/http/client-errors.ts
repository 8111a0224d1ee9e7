import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, ErrorCode } from '../common/api-error';
import { renderErrorBody } from './error-body';
import { requestLineLogger, type AppLogger } from '../common/logger';
import { pathOf, REQUEST_ID_HEADER, requestLogFields, resolveRequestId } from '../common/request-context';
import { UNMATCHED_ROUTE, type Metrics } from '../metrics/metrics';
import type { RequestTracker } from './request-tracker';

/** The API error for each refusal of Node's HTTP parser, by its documented error code. */
function clientApiError(code: string | undefined): ApiError {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(ErrorCode.RequestTimeout, 'The request was not received in time.');
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(ErrorCode.HeadersTooLarge, 'The request headers exceed 16 KiB.');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError(ErrorCode.PayloadTooLarge, 'The chunk extensions of the request body are too large.');
    default:
      return new ApiError(ErrorCode.BadRequest, 'The request is not valid HTTP.');
  }
}

export interface ClientErrorContext {
  logger: AppLogger;
  tracker: Pick<RequestTracker, 'unanswered'>;
  /** the app's metrics (the same instance the app was given) */
  metrics: Metrics;
  /** how long a client has for its headers: how long a request cut before them took */
  headersTimeoutMs: number;
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses (bare CR in
 * a header, Content-Length beside Transfer-Encoding, headers over 16 KiB, a
 * request not received in time …) is answered like every other error: the
 * error envelope, a request id in the body and in `X-Request-ID` (the open
 * request's when its headers had arrived), one log line, the HTTP metrics,
 * and the connection closed, since the parser cannot read what follows.
 * The answer is written on the socket, so the response hook never sees it:
 * it is logged and counted here, once.
 */
export function answerClientError(context: ClientErrorContext, error: Error & { code?: string }, socket: Socket): void {
  // a reset connection has nobody to answer
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const open = context.tracker.unanswered(socket);
  const apiError = clientApiError(error.code);
  const requestId = open ? open.context.requestId : resolveRequestId(undefined);
  // without a request the parser cut it at its headers: that is how long it took, for a timeout
  const elapsedMs = open ? open.reply.elapsedTime : apiError.code === ErrorCode.RequestTimeout ? context.headersTimeoutMs : 0;
  const fields = {
    ...(open ? requestLogFields(open.context, open.request, apiError.status, elapsedMs) : { request_id: requestId, status: apiError.status }),
    client_error: error.code,
  };
  if (apiError.code === ErrorCode.RequestTimeout) {
    // at warn: a client too slow to send its request is worth noticing
    context.logger.warn(fields, 'request timeout: connection closed');
  } else {
    requestLineLogger(context.logger).info(fields, 'request');
  }
  context.metrics.observeRequest(open?.request.method, open?.request.routeOptions.url ?? UNMATCHED_ROUTE, apiError.status, elapsedMs / 1000);
  // an answer already begun cannot be replaced: the connection just closes
  if (!open?.reply.raw.headersSent) writeAndClose(socket, apiError, requestId);
  else socket.destroy();
}

/**
 * A CONNECT request (Node's 'connect' event, which comes without a response
 * object): this is no proxy, so 400 in the envelope, logged and counted,
 * instead of the connection closed without a word.
 */
export function answerConnect(context: ClientErrorContext, request: IncomingMessage, socket: Socket): void {
  const apiError = new ApiError(ErrorCode.BadRequest, 'CONNECT is not supported: this server is not a proxy.');
  const requestId = resolveRequestId(request.headers['x-request-id']);
  requestLineLogger(context.logger).info({ request_id: requestId, method: request.method, path: pathOf(request.url), status: apiError.status }, 'request');
  context.metrics.observeRequest(request.method, UNMATCHED_ROUTE, apiError.status, 0);
  writeAndClose(socket, apiError, requestId);
}

function writeAndClose(socket: Socket, apiError: ApiError, requestId: string): void {
  if (socket.writable) {
    const body = JSON.stringify(renderErrorBody(apiError, requestId));
    socket.write(
      `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `${REQUEST_ID_HEADER}: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
