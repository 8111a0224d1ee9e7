import type { INestApplication, NestApplicationOptions } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule, type OpenAPIObject, type SwaggerCustomOptions } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ApiError, ErrorCode } from './common/api-error';
import { renderErrorBody } from './common/error-body';
import type { AppLogger } from './common/logger';
import { isJsonContentType, MAX_BODY_BYTES, parseJsonBody, readBody } from './common/request-body';
import { parseQueryString, REQUEST_ID_HEADER, requestLogFields, resolveRequestId, type RequestContext } from './common/request-context';
import { API_PREFIX, DOCS_PATH } from './common/api-paths';
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
export function createHttpAdapter(logger: AppLogger): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: MAX_BODY_BYTES,
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
      reply.raw.once('finish', () => logRequest(logger, request, reply));
      const error = new ApiError(ErrorCode.NotFound, 'No resource has this path: it is not valid percent-encoding.');
      void reply
        .code(error.status)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify(renderErrorBody(error, (request as unknown as RequestContext).requestId)));
    },
  });
}

function logRequest(logger: AppLogger, request: FastifyRequest, reply: FastifyReply): void {
  logger.info(requestLogFields(request as unknown as RequestContext, reply.statusCode, reply.elapsedTime), 'request');
}

function startRequest(request: FastifyRequest, reply: FastifyReply): void {
  const ctx = request as unknown as RequestContext;
  ctx.requestId = resolveRequestId(request.headers['x-request-id']);
  void reply.header(REQUEST_ID_HEADER, ctx.requestId);
}

/**
 * Installs what runs around the Nest pipeline for every request, routed or
 * not: the request id (first, so parser errors and unknown routes carry it),
 * the body reader, the one log line per response, and the API reference.
 */
export function configureApp(app: INestApplication, logger: AppLogger): void {
  const fastify = (app as NestFastifyApplication).getHttpAdapter().getInstance() as FastifyInstance;
  fastify.decorateRequest('requestId', '');
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
    logRequest(logger, request, reply);
    done();
  });

  // Every body, whatever its type and method, is read as bytes (kept for the
  // Idempotency-Key fingerprint); JSON types are parsed, anything else reaches
  // the validation pipe as a Buffer, which answers 422. Fastify would skip the
  // body of a GET or HEAD: here a body over the limit or not JSON is refused
  // on every route alike.
  for (const method of ['GET', 'HEAD', 'DELETE', 'OPTIONS']) fastify.addHttpMethod(method, { hasBody: true, overrideExisting: true });
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (request: FastifyRequest, payload, done) => {
    readBody(payload, request.headers).then(
      (bytes) => {
        (request as unknown as RequestContext).rawBody = bytes;
        const contentType = request.headers['content-type'];
        if (!isJsonContentType(contentType)) return done(null, bytes);
        try {
          done(null, parseJsonBody(bytes, contentType!));
        } catch (error) {
          done(error as Error, undefined);
        }
      },
      (error: Error) => done(error, undefined),
    );
  });

  app.setGlobalPrefix(API_PREFIX);
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
