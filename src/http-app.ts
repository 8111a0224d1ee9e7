import { RequestMethod, type INestApplication, type NestApplicationOptions } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { AuthenticationGuard } from './guards/authentication.guard';
import { TenantConcurrencyGuard } from './guards/tenant-concurrency.guard';
import { Metrics } from './metrics/metrics';
import { APP_CONFIG, type AppConfig } from './config/config';
import { API_PREFIX } from './common/api-paths';
import { PROBE_PATHS } from './health/health.controller';
import { buildOpenApiDocument } from './meta/openapi-document';
import { OpenApiDocumentHolder } from './meta/meta.controller';
import { httpLayerOf, type KeyCheck } from './http/adapter';
import { serveApiReference } from './http/api-reference';
import { installBodyParser } from './http/body-parser';
import { installRequestHooks } from './http/request-hooks';
import type { RequestTracker } from './http/request-tracker';

/** Options every app instance is created with (server and tests alike): the body is read by src/http/body-parser.ts. */
export const APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

function fastifyOf(app: INestApplication): FastifyInstance {
  return (app as NestFastifyApplication).getHttpAdapter().getInstance() as FastifyInstance;
}

/**
 * Composes the HTTP layer (src/http/) around the Nest app, the same for the
 * server and the tests: the request hooks and the body reader, the global
 * prefix, the OpenAPI document and the API reference. The lifecycle of a
 * request, in order, is in docs/decisions.md ("The lifecycle of a request").
 * Returns the tracker of requests in flight (shutdown reads it).
 */
export function composeHttpApp(app: INestApplication): RequestTracker {
  const fastify = fastifyOf(app);
  const layer = httpLayerOf(fastify);
  if (app.get(Metrics) !== layer.metrics) throw new Error('the HTTP adapter and the app were given different Metrics instances');
  const authentication = app.get(AuthenticationGuard);
  const tenants = app.get(TenantConcurrencyGuard);
  const keys: KeyCheck = {
    authenticate: (request, context) => authentication.authenticate(request, context),
    admit: (context) => tenants.admit(context),
  };
  const routes: ServedRoute[] = [];
  SERVED_ROUTES.set(app, routes);
  fastify.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      routes.push({ method, path: route.url });
      layer.servedMethods.add(method);
    }
  });
  installRequestHooks(fastify, layer, keys, app.get<AppConfig>(APP_CONFIG).dbStatementTimeoutMs);
  installBodyParser(fastify, layer.connections, layer.tracker);

  // the probes are not part of the v1 API: an orchestrator finds them at /healthz and /readyz
  app.setGlobalPrefix(API_PREFIX, { exclude: PROBE_PATHS.map((path) => ({ path, method: RequestMethod.GET })) });
  app.get(OpenApiDocumentHolder).set(buildOpenApiDocument(app));
  serveApiReference(app);
  return layer.tracker;
}

interface ServedRoute {
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
  await fastifyOf(app).ready();
}
