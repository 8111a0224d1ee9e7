import type { INestApplication, NestApplicationOptions } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { HotRouteDispatcher } from './hot-routes/hot-route.dispatcher';
import { ErrorCode } from './common/api-error';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { requestContextMiddleware, type RequestContext } from './common/request-context';
import type { AppLogger } from './common/logger';
import { API_PREFIX, DOCS_PATH } from './common/api-paths';
import { buildOpenApiDocument } from './meta/openapi-document';
import { OpenApiDocumentHolder } from './meta/meta.controller';

export const MAX_BODY_BYTES = 1024 * 1024;

/** Options every app instance is created with (server and tests alike). */
export const APP_OPTIONS: NestApplicationOptions = { rawBody: true, bodyParser: false };

/**
 * The one file that knows the HTTP platform is Express. Everything else works
 * through Nest's abstractions and Node's own request/response types.
 */
export function configureApp(app: INestApplication, logger: AppLogger): void {
  const express = app as NestExpressApplication;
  // in front of Express: plain point reads never enter the router (see HotRouteDispatcher)
  app.get(HotRouteDispatcher).install(app.getHttpServer() as Server);
  // request id first, so that parser errors and unknown routes carry it too
  express.use(requestContextMiddleware(logger));
  express.use(outsideApiPrefixNotFound);
  express.useBodyParser('json', { limit: MAX_BODY_BYTES, type: ['application/json', 'application/*+json'] });
  // any other body is read as bytes, never parsed: the Idempotency-Key
  // fingerprint covers the body as received whatever its type, and the
  // validation pipe answers 422 for a body that is not JSON
  express.useBodyParser('raw', { limit: MAX_BODY_BYTES, type: () => true });
  express.set('etag', false);
  express.set('x-powered-by', false);
  express.set('trust proxy', false);
  app.setGlobalPrefix(API_PREFIX);
  const document = buildOpenApiDocument(app);
  app.get(OpenApiDocumentHolder).set(document);
  // Swagger UI from the bundled swagger-ui-dist (no CDN). It downloads the
  // served /api/v1/openapi.json: an empty embedded document makes Swagger UI
  // fetch `swaggerUrl` (so the page and the API can never disagree), and
  // `raw: false` keeps Nest from adding /docs-json and /docs-yaml routes.
  SwaggerModule.setup(DOCS_PATH, app, () => ({}) as OpenAPIObject, {
    useGlobalPrefix: false,
    raw: false,
    swaggerUrl: `/${API_PREFIX}/openapi.json`,
    customSiteTitle: 'Agent Platform REST API reference',
    swaggerOptions: { persistAuthorization: false, displayOperationId: true, tryItOutEnabled: false },
  });
}

/**
 * Nest answers unknown routes under the global prefix; anything outside it
 * (but the API reference at /docs) would get Express's HTML page. Every response body is JSON (spec), so those
 * get the same 404 envelope here, before any parsing.
 */
function outsideApiPrefixNotFound(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  if (path === `/${API_PREFIX}` || path.startsWith(`/${API_PREFIX}/`)) return next();
  if (path === `/${DOCS_PATH}` || path.startsWith(`/${DOCS_PATH}/`)) return next();
  const body = { error: { code: ErrorCode.NotFound, message: `No such endpoint. Every path lives under /${API_PREFIX}.`, request_id: (req as RequestContext).requestId } };
  res.statusCode = 404;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}
