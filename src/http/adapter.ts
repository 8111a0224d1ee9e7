import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, ErrorCode } from '../common/api-error';
import type { AppLogger } from '../common/logger';
import { parseQueryString, type HttpRequest, type RequestStore } from '../common/request-context';
import { DEFAULT_HTTP_LIMITS, type AppConfig } from '../config/config';
import type { Metrics } from '../metrics/metrics';
import { answerClientError, answerConnect, type ClientErrorContext } from './client-errors';
import { ConnectionLimiter } from './connection-limits';
import { answerInHook, endRequest, startRequest } from './request-hooks';
import { MAX_BODY_BYTES } from './request-body';
import { RequestTracker } from './request-tracker';

export type HttpLimits = Pick<
  AppConfig,
  | 'httpRequestTimeoutMs'
  | 'httpHeadersTimeoutMs'
  | 'httpMaxConnections'
  | 'httpMaxConnectionsPerAddress'
  | 'httpBodyMinBytesPerSecond'
  | 'httpBodyGraceMs'
  | 'trustedProxies'
>;

/**
 * What the HTTP layer keeps per server, made whole with the adapter (the
 * parser's and the connections' handlers need it before the app exists);
 * the metrics are the app's own instance, handed to both.
 */
export interface HttpLayer {
  readonly logger: AppLogger;
  readonly tracker: RequestTracker;
  readonly connections: ConnectionLimiter;
  readonly metrics: Metrics;
  /** every method some route serves (filled as routes register): another method is a 404 wherever it is sent */
  readonly servedMethods: Set<string>;
}

/**
 * The guards' steps the first request hook runs before the body is read
 * (request-hooks.ts), handed over by composeHttpApp once the app exists.
 */
export interface KeyCheck {
  /** the authentication guard's step, on a route that takes a key */
  authenticate(request: Pick<HttpRequest, 'headers' | 'ip' | 'socket'>, context: RequestStore): Promise<void> | undefined;
  /** the tenant concurrency guard's step, for a request with a valid key that sends a body */
  admit(context: RequestStore): Promise<void> | undefined;
}

const LAYERS = new WeakMap<FastifyInstance, HttpLayer>();

/** The HTTP layer of a server made by {@link createHttpAdapter}. */
export function httpLayerOf(fastify: FastifyInstance): HttpLayer {
  const layer = LAYERS.get(fastify);
  if (!layer) throw new Error('the app was not created with createHttpAdapter()');
  return layer;
}

/**
 * The HTTP platform: Nest's Fastify adapter (docs/decisions.md says why).
 * The files of src/http/ are the only ones that know it; everything else
 * works through Nest's abstractions, {@link HttpRequest} and the request context.
 */
export function createHttpAdapter(logger: AppLogger, metrics: Metrics, limits: HttpLimits = DEFAULT_HTTP_LIMITS): FastifyAdapter {
  // eslint-disable-next-line prefer-const -- the handlers below run once the layer exists
  let layer: HttpLayer;
  const clientErrors: ClientErrorContext = {
    logger,
    tracker: { unanswered: (socket) => layer.tracker.unanswered(socket) },
    metrics,
    headersTimeoutMs: limits.httpHeadersTimeoutMs,
  };
  const adapter = new FastifyAdapter({
    bodyLimit: MAX_BODY_BYTES,
    // a client cannot hold a connection by sending slowly: after these, Node
    // refuses it (answered by answerClientError). Node checks them every
    // connectionsCheckingInterval (30 s by default, which would double them)
    requestTimeout: limits.httpRequestTimeoutMs,
    http: {
      headersTimeout: limits.httpHeadersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, limits.httpHeadersTimeoutMs),
      // a request without Host reaches the request hooks, which answer it in the envelope (Node would write a bare 400)
      requireHostHeader: false,
    },
    // `request.ip`: from X-Forwarded-For only when the connection comes from a listed proxy
    // (Fastify's documented option, proxy-addr's rules: the nearest address not trusted)
    trustProxy: limits.trustedProxies.length > 0 ? limits.trustedProxies : false,
    // what Node's parser refuses is answered in the envelope, logged and counted
    clientErrorHandler: (error: Error, socket: Socket) => answerClientError(clientErrors, error, socket),
    // while closing, a request arriving on an open keep-alive connection is
    // still served (with Connection: close, so the connection drains), not
    // answered with Fastify's own 503 body outside the envelope
    return503OnClosing: false,
    // routing as the API has always matched paths: /Agents/ is /agents
    routerOptions: {
      ignoreTrailingSlash: true,
      caseSensitive: false,
      // an over-long id is a 404 from the handler, not a 414 from the router
      maxParamLength: 2048,
      querystringParser: parseQueryString,
    },
    // the router refuses a path it cannot percent-decode before any hook:
    // such a path names no resource (404); it still gets a request id and its log line
    frameworkErrors: (_error: Error, request: FastifyRequest, reply: FastifyReply) => {
      const context = startRequest(layer, request, reply);
      reply.raw.once('finish', () => endRequest(layer, context, request, reply));
      answerInHook(context, reply, new ApiError(ErrorCode.NotFound, 'No resource has this path: it is not valid percent-encoding.'));
    },
  });
  const fastify = adapter.getInstance() as FastifyInstance;
  const server = fastify.server;
  layer = {
    logger,
    tracker: new RequestTracker(server),
    connections: new ConnectionLimiter(
      {
        max: limits.httpMaxConnections,
        perAddress: limits.httpMaxConnectionsPerAddress,
        bodyMinBytesPerSecond: limits.httpBodyMinBytesPerSecond,
        bodyGraceMs: limits.httpBodyGraceMs,
      },
      logger,
    ),
    metrics,
    servedMethods: new Set(),
  };
  LAYERS.set(fastify, layer);
  layer.connections.install(server);
  // Node answers an `Expect` itself unless these events are handled: a bare 417
  // for anything but 100-continue, and `100 Continue` to every 100-continue,
  // inviting the body before the key is checked. Both are handed on as an
  // ordinary 'request' (every listener: Fastify's routing, the connection
  // limits): the request hooks answer the first in the envelope, and invite
  // the body only of a request whose body will be read (request-hooks.ts)
  const asRequest = (request: IncomingMessage, response: ServerResponse) => server.emit('request', request, response);
  server.on('checkExpectation', asRequest);
  server.on('checkContinue', asRequest);
  // Node would close a CONNECT's connection without a word
  server.on('connect', (request: IncomingMessage, socket: Socket) => answerConnect(clientErrors, request, socket));
  return adapter;
}
