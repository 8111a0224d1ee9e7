import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { resolveTraceId } from '../../libs/trace-context/trace-context';
import { ApiError, ErrorCode } from '../common/api-error';
import { renderErrorBody } from './error-body';
import { requestLineLogger } from '../common/logger';
import { REQUEST_ID_HEADER, requestLogFields, resolveRequestId, runInRequestContext, type RequestStore } from '../common/request-context';
import { startDatabaseDeadline } from '../database/request-scope';
import { UNMATCHED_ROUTE } from '../metrics/metrics';
import type { HttpLayer, KeyCheck } from './adapter';
import { bodyIsRead } from './body-parser';
import { takesKey } from './route-flags';

/**
 * Headers of every answer, success or error. Answers hold an organization's
 * data and are read with a key: no cache (browser, proxy, CDN) keeps them;
 * no browser guesses a type other than the one sent; no page frames them or
 * runs anything from them. The API reference page sets its own policy
 * (api-reference.ts).
 */
const SECURITY_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};

/**
 * The request's context (its id, its trace id), its id on the response; the
 * request is tracked from here. The caller runs the rest of the request in
 * the context returned.
 */
export function startRequest(layer: HttpLayer, request: FastifyRequest, reply: FastifyReply): RequestStore {
  const context: RequestStore = {
    requestId: resolveRequestId(request.headers['x-request-id']),
    traceId: resolveTraceId(request.headers.traceparent),
    databaseDeadline: null,
  };
  layer.tracker.started(request, reply, context);
  void reply.header(REQUEST_ID_HEADER, context.requestId).headers(SECURITY_HEADERS);
  return context;
}

/**
 * The end of every request, routed or not: its one log line, and the HTTP
 * metrics by route template (`unmatched` when no route matched).
 */
export function endRequest(layer: HttpLayer, context: RequestStore, request: FastifyRequest, reply: FastifyReply): void {
  const elapsedMs = reply.elapsedTime;
  requestLineLogger(layer.logger).info(requestLogFields(context, request, reply.statusCode, elapsedMs), 'request');
  layer.metrics.observeRequest(request.method, request.routeOptions.url ?? UNMATCHED_ROUTE, reply.statusCode, elapsedMs / 1000);
}

/**
 * An error answered by a hook, before Nest's pipeline: the same envelope the
 * exception filter writes. `closeConnection` when what follows on the
 * connection (an unread body) cannot be trusted to be the next request.
 */
export function answerInHook(context: RequestStore, reply: FastifyReply, error: ApiError, closeConnection = false): void {
  if (closeConnection) void reply.header('Connection', 'close');
  void reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(renderErrorBody(error, context.requestId)));
}

/**
 * RFC 9112 §3.2's Host: `uri-host [ ":" port ]`, where uri-host is an IP
 * literal in brackets, or a reg-name of unreserved, percent-encoded and
 * sub-delim characters (an IPv4 address is one too). Empty is valid.
 */
const VALID_HOST = /^(?:\[[0-9A-Za-z:._~!$&'()*+,;=-]+\]|[0-9A-Za-z._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;

/**
 * How many lines of each of these headers the request carries: Node keeps
 * the first of a repeated Host or Authorization and discards the others
 * silently, so the count is read from the raw lines (one pass over a list the
 * header limits already bound).
 */
function countLines(rawHeaders: string[]): { host: number; authorization: number } {
  const count = { host: 0, authorization: 0 };
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    // cheap length test first: most header names are neither
    if (name.length === 4 && name.toLowerCase() === 'host') count.host++;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') count.authorization++;
  }
  return count;
}

/**
 * What HTTP itself requires of a request before it is routed, in place of
 * the bare answers Node would write (or the silent choices it makes): an
 * HTTP/1.1 request needs exactly one valid Host header (RFC 9112 §3.2: 400
 * for none, several, or an invalid value), an `Expect` other than
 * `100-continue` cannot be met (417), and two Authorization headers are
 * refused (400) rather than the first used silently, where a proxy in front
 * may have read the other.
 */
function protocolRefusal(request: FastifyRequest): ApiError | null {
  const lines = countLines(request.raw.rawHeaders);
  if (lines.host === 0 && request.raw.httpVersion === '1.1') {
    return new ApiError(ErrorCode.BadRequest, 'An HTTP/1.1 request needs a Host header.');
  }
  if (lines.host > 1) return new ApiError(ErrorCode.BadRequest, 'A request carries at most one Host header.');
  if (lines.host === 1 && !VALID_HOST.test(request.headers.host ?? '')) {
    return new ApiError(ErrorCode.BadRequest, 'The Host header is not a valid host[:port].');
  }
  if (lines.authorization > 1) return new ApiError(ErrorCode.BadRequest, 'A request carries at most one Authorization header.');
  const expect = request.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    return new ApiError(ErrorCode.ExpectationFailed, 'Only "Expect: 100-continue" is supported.');
  }
  return null;
}

/**
 * A method no route serves (PUT, OPTIONS, QUERY, PROPFIND…) is a 404 on every
 * path, the answer Nest's not-found handler gives, given here before the
 * body is read: Fastify would otherwise judge a body first (a QUERY without
 * Content-Type was a 400, answered as a 422 with no field, on every path).
 */
function noSuchMethod(): ApiError {
  return new ApiError(ErrorCode.NotFound, 'No such endpoint.');
}

/**
 * Who is calling, before the body is read, on a route that takes a key: the
 * authentication guard's own step (keys.authenticate), under a database
 * deadline of its own for the key lookup. Its outcome stays on the request
 * for the guards; only a request it found a valid key on has its body read
 * (body-parser.ts). A request with a valid key that sends a body then takes
 * its tenant's slots (keys.admit), so a body slow to arrive holds its own
 * key's and organization's slots; a refusal stays on the request for the
 * tenant guard, in its place. A promise while either waits.
 */
function admitBeforeBody(keys: KeyCheck, context: RequestStore, request: FastifyRequest, dbStatementTimeoutMs: number): Promise<void> | undefined {
  if (!takesKey(request)) return undefined;
  const admit = (): Promise<void> | undefined => {
    if (context.auth === undefined || !announcesBody(request)) return undefined;
    return keys.admit(context)?.catch((refusal: unknown) => {
      context.tenantRefusal = refusal;
    });
  };
  startDatabaseDeadline(context, dbStatementTimeoutMs);
  const authenticating = keys.authenticate(request, context)?.catch((error: unknown) => {
    context.authError = error;
  });
  return authenticating ? authenticating.then(admit) : admit();
}

/**
 * `100 Continue` (Node no longer writes it itself, adapter.ts) only to a
 * request whose body the reader will read: a valid key and its tenant's
 * slots. Any other is answered from its headers, and a client that waits
 * for the invitation never sends the body at all.
 */
function inviteBody(context: RequestStore, request: FastifyRequest, reply: FastifyReply): void {
  if (!bodyIsRead(context)) return;
  if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue();
}

/** Does the request announce a body (a non-zero Content-Length, or chunks)? */
function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * The hooks every request passes, routed or not, in this order:
 * 1. `onRequest`: the request context with its request id and trace id
 *    (first, so every refusal carries them; everything after runs in it),
 *    the in-flight tracker, HTTP's own refusals (missing, repeated
 *    or invalid Host, repeated Authorization, unmet Expect), a method no
 *    route serves (404); then, on a route that takes a key, the key (from
 *    memory, or looked up) and, for a request that sends a body, its
 *    tenant's slots;
 * 2. the body reader (body-parser.ts) runs between these two: it reads the
 *    body of a request with a valid key only; any other request is answered
 *    without reading it, at once: Node discards the rest of the body as it
 *    comes (reading, nothing more), on a connection that counts as idle from
 *    then on (connection-limits.ts), so a slow body is not waited for;
 * 3. `preHandler`: the request's database deadline starts again (every
 *    query of the handler ends by one deadline counted from here, once the
 *    body is read: a slow upload is the request timeout's to bound, not the
 *    database's — docs/decisions.md, "Timeouts"; the key lookup, before the
 *    body, had a budget of its own in step 1); then Nest runs guards →
 *    interceptors → pipe → handler → filter;
 * 4. `onSend`: the answer, success or error, is on its way, so the handler
 *    has finished: the tenant's concurrency slots are given back;
 * 5. `onResponse`: the one log line and the HTTP metrics.
 */
export function installRequestHooks(fastify: FastifyInstance, layer: HttpLayer, keys: KeyCheck, dbStatementTimeoutMs: number): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    const context = startRequest(layer, request, reply);
    // every later hook, the body reader and Nest's pipeline run in this context
    runInRequestContext(context, () => {
      const refusal = protocolRefusal(request);
      if (refusal) return answerInHook(context, reply, refusal, true);
      if (request.routeOptions.url === undefined && !layer.servedMethods.has(request.method)) {
        return answerInHook(context, reply, noSuchMethod(), announcesBody(request));
      }
      const admitting = admitBeforeBody(keys, context, request, dbStatementTimeoutMs);
      const proceed = () => {
        inviteBody(context, request, reply);
        done();
      };
      if (admitting) void admitting.then(proceed);
      else proceed();
    });
  });
  fastify.addHook('preHandler', (request, _reply, done) => {
    layer.tracker.handling(request);
    startDatabaseDeadline(layer.tracker.contextOf(request), dbStatementTimeoutMs);
    done();
  });
  fastify.addHook('onSend', (request, _reply, payload, done) => {
    layer.tracker.contextOf(request).releaseTenantSlots?.();
    done(null, payload);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    endRequest(layer, layer.tracker.contextOf(request), request, reply);
    done();
  });
}
