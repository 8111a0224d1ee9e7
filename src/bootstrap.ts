import type { INestApplication, NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { requestContextMiddleware } from './common/request-context';
import type { AppLogger } from './common/logger';
import { API_PREFIX, buildOpenApiDocument } from './meta/openapi-document';
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
  // request id first, so that parser errors and unknown routes carry it too
  express.use(requestContextMiddleware(logger));
  express.useBodyParser('json', { limit: MAX_BODY_BYTES, type: ['application/json', 'application/*+json'] });
  express.set('etag', false);
  express.set('x-powered-by', false);
  express.set('trust proxy', false);
  app.setGlobalPrefix(API_PREFIX);
  app.get(OpenApiDocumentHolder).set(buildOpenApiDocument(app));
}
