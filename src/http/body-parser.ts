import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ConnectionLimiter } from './connection-limits';
import type { RequestTracker } from './request-tracker';
import type { RequestStore } from '../common/request-context';
import { isJsonContentType, MAX_BODY_BYTES, parseJsonBody, readBody } from './request-body';

/**
 * Every body of a request with a valid key, whatever its type and method,
 * is read as bytes (kept for the Idempotency-Key fingerprint); JSON types
 * are parsed, anything else reaches the validation pipe as a Buffer, which
 * answers 422. Fastify would skip the body of a GET or HEAD: here a body
 * over the limit or not JSON is refused on every route alike.
 *
 * A request without a valid key (checked before this, request-hooks.ts)
 * has no body read at all, on any route: it is answered from its headers
 * (401, 429, a public route's answer, 404), so it costs no decompression,
 * parsing or validation, and a slow body is not waited for.
 */
/** Only a request with a valid key, admitted to its tenant's slots, has its body read (or invited: request-hooks.ts). */
export function bodyIsRead(context: RequestStore): boolean {
  return context.auth !== undefined && context.tenantRefusal === undefined;
}

export function installBodyParser(fastify: FastifyInstance, connections: ConnectionLimiter, tracker: RequestTracker): void {
  for (const method of ['GET', 'HEAD', 'DELETE', 'OPTIONS']) fastify.addHttpMethod(method, { hasBody: true, overrideExisting: true });
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (request: FastifyRequest, payload, done) => {
    const context = tracker.contextOf(request);
    if (!bodyIsRead(context)) return done(null, undefined);
    const parse = (bytes: Buffer) => {
      context.rawBody = bytes;
      const contentType = request.headers['content-type'];
      if (!isJsonContentType(contentType)) return done(null, bytes);
      try {
        done(null, parseJsonBody(bytes, contentType!));
      } catch (error) {
        done(error as Error, undefined);
      }
    };
    // `Content-Length: 0` (clients that always send a Content-Type send it on
    // GET too): the same empty body, without waiting for the stream's end
    if (request.headers['content-length'] === '0' && request.headers['content-encoding'] === undefined) return parse(Buffer.alloc(0));
    // the connection is sending its body: busy only within the body-progress budget (connection-limits.ts)
    const socket = request.raw.socket;
    connections.bodyStarted(socket);
    readBody(payload, request.headers, MAX_BODY_BYTES, (bytes) => connections.bodyReceived(socket, bytes)).then(
      (bytes) => {
        connections.bodyEnded(socket);
        parse(bytes);
      },
      (error: Error) => {
        connections.bodyEnded(socket);
        done(error, undefined);
      },
    );
  });
}
