import { RequestMethod, type INestApplication, type NestApplicationOptions } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule, type OpenAPIObject, type SwaggerCustomOptions } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { ApiError, ErrorCode } from './common/api-error';
import { renderErrorBody } from './common/error-body';
import { requestLineLogger, type AppLogger } from './common/logger';
import { Metrics, UNMATCHED_ROUTE } from './metrics/metrics';
import { resolveTraceId } from '../libs/trace-context/trace-context';
import { APP_CONFIG, DEFAULT_HTTP_LIMITS, type AppConfig } from './config/config';
import { runWithRequestDeadline } from './database/request-scope';
import { isJsonContentType, MAX_BODY_BYTES, parseJsonBody, readBody } from './common/request-body';
import { parseQueryString, pathOf, REQUEST_ID_HEADER, requestLogFields, resolveRequestId, type RequestContext } from './common/request-context';
import { API_PREFIX, DOCS_PATH } from './common/api-paths';
import { PROBE_PATHS } from './health/health.controller';
import { buildOpenApiDocument } from './meta/openapi-document';
import { OpenApiDocumentHolder } from './meta/meta.controller';

export { MAX_BODY_BYTES };

/** Options every app instance is created with (server and tests alike): the body is read by {@link configureApp}. */
export const APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

/**
 * The HTTP platform: Nest's Fastify adapter (docs/decisions.md says why).
 * This file is the only one that knows it; everything else works through
 * Nest's abstractions and {@link RequestContext}.
 */
export function createHttpAdapter(logger: AppLogger, limits: HttpLimits = DEFAULT_HTTP_LIMITS): FastifyAdapter {
  const adapter = new FastifyAdapter({
    bodyLimit: MAX_BODY_BYTES,
    // a client cannot hold a connection by sending slowly: after these, Node
    // answers 408 and closes it. Node checks them every
    // connectionsCheckingInterval (30 s by default, which would double them)
    requestTimeout: limits.httpRequestTimeoutMs,
    http: {
      headersTimeout: limits.httpHeadersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, limits.httpHeadersTimeoutMs),
    },
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
      startRequest(request, reply);
      reply.raw.once('finish', () => endRequest(logger, request, reply));
      const error = new ApiError(ErrorCode.NotFound, 'No resource has this path: it is not valid percent-encoding.');
      void reply
        .code(error.status)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify(renderErrorBody(error, (request as unknown as RequestContext).requestId)));
    },
  });
  const fastify = adapter.getInstance() as FastifyInstance;
  const server = fastify.server;
  // a request timeout is answered in the envelope; the parser's own refusals
  // (malformed 400, headers too large 431) stay Fastify's, before any request exists
  const [platformClientError] = server.listeners('clientError') as Array<(error: Error, socket: Socket) => void>;
  server.removeAllListeners('clientError');
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) =>
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? answerRequestTimeout(logger, fastify, limits, socket) : platformClientError(error, socket),
  );
  // beyond the cap Node closes a new connection as soon as it is accepted (the
  // balancer retries elsewhere): file descriptors stay for the database
  server.maxConnections = limits.httpMaxConnections;
  let lastDropWarning = 0;
  server.on('drop', () => {
    if (Date.now() - lastDropWarning < 10_000) return;
    lastDropWarning = Date.now();
    logger.warn({ max_connections: limits.httpMaxConnections }, 'connection refused: HTTP_MAX_CONNECTIONS open connections');
  });
  return adapter;
}

export type HttpLimits = Pick<AppConfig, 'httpRequestTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpMaxConnections'>;

/** The request a connection is answering, for a client error that comes while its body is being read. */
const requestOnSocket = new WeakMap<Socket, { request: FastifyRequest; reply: FastifyReply }>();

/**
 * Node's request or headers timeout: the error envelope, the request's id
 * when its headers had arrived, a log line, the HTTP metrics, and the
 * connection closed (it cannot carry another request). The answer is written
 * on the socket, so the response hook ({@link endRequest}) never sees it:
 * it is logged and counted here, once.
 */
function answerRequestTimeout(logger: AppLogger, fastify: FastifyInstance, limits: HttpLimits, socket: Socket): void {
  if (socket.destroyed) return;
  // a finished answer means the connection is waiting for its next request: that one has no id yet
  const current = requestOnSocket.get(socket);
  const open = current && !current.reply.raw.writableEnded ? current : undefined;
  const requestId = open ? (open.request as unknown as RequestContext).requestId : resolveRequestId(undefined);
  const error = new ApiError(ErrorCode.RequestTimeout, 'The request was not received in time.');
  const body = JSON.stringify(renderErrorBody(error, requestId));
  // without headers there is no request yet: Node cut it at the headers timeout, so that is how long it took
  const elapsedMs = open ? open.reply.elapsedTime : limits.httpHeadersTimeoutMs;
  // the request line's fields, at warn: a client too slow to send its request is worth noticing
  const fields = open ? requestLogFields(open.request as unknown as RequestContext, error.status, elapsedMs) : { request_id: requestId, status: error.status };
  logger.warn(fields, 'request timeout: connection closed');
  // the app's metrics are looked up now: createHttpAdapter runs before the app exists
  APP_METRICS.get(fastify)?.observeRequest(open?.request.method, open?.request.routeOptions.url ?? UNMATCHED_ROUTE, error.status, elapsedMs / 1000);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `${REQUEST_ID_HEADER}: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** The HTTP metrics of each app (set by {@link configureApp}), found from a request by its server. */
const APP_METRICS = new WeakMap<FastifyInstance, Metrics>();

/**
 * The end of every request, routed or not: its one log line, and the HTTP
 * metrics by route template (`unmatched` when no route matched).
 */
function endRequest(logger: AppLogger, request: FastifyRequest, reply: FastifyReply): void {
  const elapsedMs = reply.elapsedTime;
  requestLineLogger(logger).info(requestLogFields(request as unknown as RequestContext, reply.statusCode, elapsedMs), 'request');
  APP_METRICS.get(request.server)?.observeRequest(request.method, request.routeOptions.url ?? UNMATCHED_ROUTE, reply.statusCode, elapsedMs / 1000);
}

function startRequest(request: FastifyRequest, reply: FastifyReply): void {
  const ctx = request as unknown as RequestContext;
  ctx.requestId = resolveRequestId(request.headers['x-request-id']);
  ctx.traceId = resolveTraceId(request.headers.traceparent);
  requestOnSocket.set(request.raw.socket, { request, reply });
  void reply.header(REQUEST_ID_HEADER, ctx.requestId);
}

/**
 * Installs what runs around the Nest pipeline for every request, routed or
 * not: the request id and trace id (first, so parser errors and unknown
 * routes carry them), the body reader, the one log line and the HTTP metrics
 * per response, and the API reference.
 */
export function configureApp(app: INestApplication, logger: AppLogger): void {
  const fastify = (app as NestFastifyApplication).getHttpAdapter().getInstance() as FastifyInstance;
  fastify.decorateRequest('requestId', '');
  fastify.decorateRequest('traceId', '');
  APP_METRICS.set(fastify, app.get(Metrics));
  const routes: ServedRoute[] = [];
  SERVED_ROUTES.set(app, routes);
  fastify.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, path: route.url });
  });
  fastify.addHook('onRequest', (request, reply, done) => {
    startRequest(request, reply);
    done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    endRequest(logger, request, reply);
    done();
  });
  // the guards, interceptors and handler run in the request's database scope:
  // every query of the request (the key lookup too) ends by one deadline,
  // counted from here, once the body is read: a slow upload is the request
  // timeout's to bound, not the database's (docs/decisions.md, "Timeouts")
  const { dbStatementTimeoutMs } = app.get<AppConfig>(APP_CONFIG);
  fastify.addHook('preHandler', (_request, _reply, done) => {
    runWithRequestDeadline(dbStatementTimeoutMs, () => done());
  });

  // Every body, whatever its type and method, is read as bytes (kept for the
  // Idempotency-Key fingerprint); JSON types are parsed, anything else reaches
  // the validation pipe as a Buffer, which answers 422. Fastify would skip the
  // body of a GET or HEAD: here a body over the limit or not JSON is refused
  // on every route alike.
  for (const method of ['GET', 'HEAD', 'DELETE', 'OPTIONS']) fastify.addHttpMethod(method, { hasBody: true, overrideExisting: true });
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (request: FastifyRequest, payload, done) => {
    const parse = (bytes: Buffer) => {
      (request as unknown as RequestContext).rawBody = bytes;
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
    readBody(payload, request.headers).then(parse, (error: Error) => done(error, undefined));
  });

  // the probes are not part of the v1 API: an orchestrator finds them at /healthz and /readyz
  app.setGlobalPrefix(API_PREFIX, { exclude: PROBE_PATHS.map((path) => ({ path, method: RequestMethod.GET })) });
  const document = buildOpenApiDocument(app);
  app.get(OpenApiDocumentHolder).set(document);
  ApiReference.serve(app);
}

export interface ServedRoute {
  method: string;
  /** as registered, with `:name` parameters */
  path: string;
}

const SERVED_ROUTES = new WeakMap<INestApplication, ServedRoute[]>();

/** Every route the platform serves (tests: each API route is documented, and each documented one served). */
export function servedRoutes(app: INestApplication): ServedRoute[] {
  return [...(SERVED_ROUTES.get(app) ?? [])];
}

/** A request the server has received the headers of and not finished answering. */
export interface InFlightRequest {
  request_id: string;
  method: string;
  path: string;
  /** receiving: the body is still coming; handling: the server is working on it; sending: the answer is being written */
  phase: 'receiving' | 'handling' | 'sending';
}

export interface RequestTracker {
  inFlight(): InFlightRequest[];
  /**
   * From now on every answer closes its connection (`Connection: close`),
   * those of requests already in flight included: the platform only marks
   * requests that arrive after it began closing.
   */
  closeAfterAnswers(): void;
  /** Closes every connection, idle or not (the shutdown deadline). */
  closeAllConnections(): void;
}

/**
 * What shutdown needs to know about open requests (server.ts): which are in
 * flight and in which phase, so that a request cut at the hard deadline is
 * named in the log. Install before {@link initApp}.
 */
export function trackRequests(app: INestApplication): RequestTracker {
  const fastify = (app as NestFastifyApplication).getHttpAdapter().getInstance() as FastifyInstance;
  const open = new Map<FastifyRequest, { reply: FastifyReply; handling: boolean }>();
  let closing = false;
  fastify.addHook('onRequest', (request, reply, done) => {
    open.set(request, { reply, handling: false });
    if (closing) reply.raw.setHeader('Connection', 'close');
    // 'close' comes once the answer is out or the connection is gone, whichever first
    reply.raw.once('close', () => open.delete(request));
    done();
  });
  fastify.addHook('preHandler', (request, _reply, done) => {
    const entry = open.get(request);
    if (entry) entry.handling = true;
    done();
  });
  return {
    inFlight: () =>
      [...open].map(([request, { reply, handling }]) => ({
        request_id: (request as unknown as RequestContext).requestId,
        method: request.method,
        path: pathOf(request.url),
        phase: reply.sent ? 'sending' : handling ? 'handling' : 'receiving',
      })),
    closeAfterAnswers: () => {
      closing = true;
      for (const { reply } of open.values()) if (!reply.raw.headersSent) reply.raw.setHeader('Connection', 'close');
    },
    closeAllConnections: () => fastify.server.closeAllConnections(),
  };
}

/** Initializes the app and its HTTP platform: after this, requests can be sent to `app.getHttpServer()`. */
export async function initApp(app: INestApplication): Promise<void> {
  await app.init();
  await ((app as NestFastifyApplication).getHttpAdapter().getInstance() as FastifyInstance).ready();
}

const SWAGGER_UI_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/**
 * Swagger UI at /docs from the bundled swagger-ui-dist (no CDN). It downloads
 * the served /api/v1/openapi.json: an empty embedded document makes Swagger UI
 * fetch `swaggerUrl` (so the page and the API can never disagree), and no
 * /docs-json or /docs-yaml routes are added. The page's few static files are
 * served here (SwaggerModule.setup would need @fastify/static for them).
 */
class ApiReference extends SwaggerModule {
  static serve(app: INestApplication): void {
    const options: SwaggerCustomOptions = {
      useGlobalPrefix: false,
      swaggerUrl: `/${API_PREFIX}/openapi.json`,
      customSiteTitle: 'Agent Platform REST API reference',
      swaggerOptions: { persistAuthorization: false, displayOperationId: true, tryItOutEnabled: false },
    };
    const adapter = app.getHttpAdapter();
    this.serveDocuments(`/${DOCS_PATH}`, DOCS_PATH, adapter, () => ({}) as OpenAPIObject, {
      ui: true,
      raw: false,
      jsonDocumentUrl: '',
      yamlDocumentUrl: '',
      swaggerOptions: options,
    });
    const root = dirname(require.resolve('swagger-ui-dist/package.json'));
    const cache = new Map<string, Buffer>();
    for (const [file, type] of Object.entries(SWAGGER_UI_ASSETS)) {
      adapter.get(`/${DOCS_PATH}/${file}`, async (_request: FastifyRequest, reply: FastifyReply) => {
        let bytes = cache.get(file);
        if (!bytes) cache.set(file, (bytes = await readFile(join(root, file))));
        return reply.type(type).send(bytes);
      });
    }
  }
}
