import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { resolveTraceId } from '../../libs/trace-context/trace-context';
import { ApiError, ErrorCode } from '../common/api-error';
import { renderErrorBody } from '../common/error-body';
import { requestLineLogger } from '../common/logger';
import { REQUEST_ID_HEADER, requestLogFields, resolveRequestId, type RequestContext } from '../common/request-context';
import { runWithRequestDeadline } from '../database/request-scope';
import { UNMATCHED_ROUTE } from '../metrics/metrics';
import type { HttpLayer } from './adapter';
import { takesKey } from './route-flags';

/** The request id and trace id, on the request and the response; the request is tracked from here. */
export function startRequest(layer: HttpLayer, request: FastifyRequest, reply: FastifyReply): void {
  const ctx = request as unknown as RequestContext;
  ctx.requestId = resolveRequestId(request.headers['x-request-id']);
  ctx.traceId = resolveTraceId(request.headers.traceparent);
  layer.tracker.started(request, reply);
  void reply.header(REQUEST_ID_HEADER, ctx.requestId);
}

/**
 * The end of every request, routed or not: its one log line, and the HTTP
 * metrics by route template (`unmatched` when no route matched).
 */
export function endRequest(layer: HttpLayer, request: FastifyRequest, reply: FastifyReply): void {
  const elapsedMs = reply.elapsedTime;
  requestLineLogger(layer.logger).info(requestLogFields(request as unknown as RequestContext, reply.statusCode, elapsedMs), 'request');
  layer.metrics?.observeRequest(request.method, request.routeOptions.url ?? UNMATCHED_ROUTE, reply.statusCode, elapsedMs / 1000);
}

/**
 * An error answered by a hook, before Nest's pipeline: the same envelope the
 * exception filter writes. `closeConnection` when what follows on the
 * connection (an unread body) cannot be trusted to be the next request.
 */
export function answerInHook(request: FastifyRequest, reply: FastifyReply, error: ApiError, closeConnection = false): void {
  if (closeConnection) void reply.header('Connection', 'close');
  void reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(renderErrorBody(error, (request as unknown as RequestContext).requestId)));
}

/**
 * What HTTP itself requires of a request before it is routed, in place of
 * the bare answers Node would write: HTTP/1.1 needs a Host header (400), and
 * an `Expect` other than `100-continue` cannot be met (417).
 */
function protocolRefusal(request: FastifyRequest): ApiError | null {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    return new ApiError(ErrorCode.BadRequest, 'An HTTP/1.1 request needs a Host header.');
  }
  const expect = request.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    return new ApiError(ErrorCode.ExpectationFailed, 'Only "Expect: 100-continue" is supported.');
  }
  return null;
}

/**
 * Who is calling, before the body is read, on a route that takes a key: the
 * authentication guard's own step (layer.authenticate), under a database
 * deadline of its own for the key lookup. Its outcome stays on the request
 * for the guards; only a request it found a valid key on has its body read
 * (body-parser.ts). A request with a valid key that sends a body then takes
 * its tenant's slots (layer.admit), so a body slow to arrive holds its own
 * key's and organization's slots; a refusal stays on the request for the
 * tenant guard, in its place. A promise while either waits.
 */
function admitBeforeBody(layer: HttpLayer, request: FastifyRequest, dbStatementTimeoutMs: number): Promise<void> | undefined {
  if (!layer.authenticate || !takesKey(request)) return undefined;
  const ctx = request as unknown as RequestContext;
  const admit = (): Promise<void> | undefined => {
    if (ctx.auth === undefined || !layer.admit || !announcesBody(request)) return undefined;
    return layer.admit(ctx)?.catch((refusal: unknown) => {
      ctx.tenantRefusal = refusal;
    });
  };
  return runWithRequestDeadline(dbStatementTimeoutMs, () => {
    const authenticating = layer.authenticate!(ctx)?.catch((error: unknown) => {
      ctx.authError = error;
    });
    return authenticating ? authenticating.then(admit) : admit();
  });
}

/** Does the request announce a body (a non-zero Content-Length, or chunks)? */
function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * The hooks every request passes, routed or not, in this order:
 * 1. `onRequest`: request id and trace id (first, so every refusal carries
 *    them), the in-flight tracker, HTTP's own refusals (missing Host,
 *    unmet Expect); then, on a route that takes a key, the key (from
 *    memory, or looked up) and, for a request that sends a body, its
 *    tenant's slots;
 * 2. the body reader (body-parser.ts) runs between these two: it reads the
 *    body of a request with a valid key only; any other request is answered
 *    without reading it, at once: Node discards the rest of the body as it
 *    comes (reading, nothing more), on a connection that counts as idle from
 *    then on (connection-limits.ts), so a slow body is not waited for;
 * 3. `preHandler`: the request's database scope (every query of the
 *    handler ends by one deadline counted from here, once the body is read:
 *    a slow upload is the request timeout's to bound, not the database's —
 *    docs/decisions.md, "Timeouts"; the key lookup, before the body, had a
 *    deadline of its own in step 1); then Nest
 *    runs guards → interceptors → pipe → handler → filter inside it;
 * 4. `onSend`: the answer, success or error, is on its way, so the handler
 *    has finished: the tenant's concurrency slots are given back;
 * 5. `onResponse`: the one log line and the HTTP metrics.
 */
export function installRequestHooks(fastify: FastifyInstance, layer: HttpLayer, dbStatementTimeoutMs: number): void {
  fastify.decorateRequest('requestId', '');
  fastify.decorateRequest('traceId', '');
  fastify.addHook('onRequest', (request, reply, done) => {
    startRequest(layer, request, reply);
    const refusal = protocolRefusal(request);
    if (refusal) return answerInHook(request, reply, refusal, true);
    const admitting = admitBeforeBody(layer, request, dbStatementTimeoutMs);
    if (admitting) void admitting.then(() => done());
    else done();
  });
  fastify.addHook('preHandler', (request, _reply, done) => {
    layer.tracker.handling(request);
    runWithRequestDeadline(dbStatementTimeoutMs, () => done());
  });
  fastify.addHook('onSend', (request, _reply, payload, done) => {
    const ctx = request as unknown as RequestContext;
    ctx.releaseTenantSlots?.();
    done(null, payload);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    endRequest(layer, request, reply);
    done();
  });
}
