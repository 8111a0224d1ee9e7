import { Inject, Injectable, OnModuleInit, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { authorize } from '../auth/api-key.guard';
import { ApiKeysService } from '../auth/api-keys.service';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from '../auth/auth.decorators';
import { envelope } from '../common/envelope';
import { renderErrorBody, resolveApiError } from '../common/error-body';
import { LOGGER, type AppLogger } from '../common/logger';
import { beginRequest, type AuthContext } from '../common/request-context';
import { API_PREFIX } from '../common/api-paths';
import { RateLimitGuard } from '../rate-limit/rate-limit.guard';
import { HOT_ROUTE, type HotRouteInvoke } from './hot-route.decorator';

/**
 * A path parameter the hot path accepts: unreserved characters only, so the
 * value needs no percent-decoding and is exactly what the router would pass.
 */
const PLAIN_PARAM = /^[A-Za-z0-9_-]{1,128}$/;

type Segment = { literal: string } | { param: string };

interface CompiledRoute {
  segments: Segment[];
  scope: string;
  controller: unknown;
  invoke: HotRouteInvoke<unknown>;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

function toSegments(...parts: Array<string | undefined>): Segment[] {
  return parts
    .flatMap((part) => (part ?? '').split('/'))
    .filter((segment) => segment !== '')
    .map((segment) => (segment.startsWith(':') ? { param: segment.slice(1) } : { literal: segment }));
}

/** Could one request path match both templates? */
function overlaps(a: Segment[], b: Segment[]): boolean {
  return a.length === b.length && a.every((s, i) => !('literal' in s && 'literal' in b[i] && s.literal !== (b[i] as { literal: string }).literal));
}

/**
 * The hot path. Point reads dominate an API's traffic, and for them the
 * framework's per-request machinery (Express's router and response helpers,
 * Nest's guard, pipe and interceptor chain) costs more CPU than the query
 * itself. For the routes marked `@HotRoute`, this dispatcher answers plain
 * requests — GET, exactly the canonical path, no query string, no body, a
 * valid API key — itself, with the same steps in the same order as the full
 * pipeline, through the same functions: request id and log line
 * (`beginRequest`), rate limit (`RateLimitGuard.consume`), scope and
 * organization status (`authorize`), the controller method, the success
 * envelope (`envelope`), and errors (`resolveApiError`, `renderErrorBody`).
 *
 * Anything else goes to the framework untouched, and so does a request whose
 * key does not authenticate before anything is counted (the full pipeline
 * then counts it per IP and answers 401). Only Node's own request and
 * response types are used: the HTTP platform can change without touching this.
 */
@Injectable()
export class HotRouteDispatcher implements OnModuleInit {
  private routes: CompiledRoute[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    private readonly limiter: RateLimitGuard,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  onModuleInit(): void {
    const hot: CompiledRoute[] = [];
    const others: Segment[][] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const { instance, metatype } = wrapper;
      if (!instance || !metatype) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      const base = Reflect.getMetadata(PATH_METADATA, metatype) as string | string[] | undefined;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name] as (...args: unknown[]) => unknown;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        const path = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        if (method === undefined || path === undefined) continue;
        const invoke = this.reflector.get<HotRouteInvoke<unknown> | undefined>(HOT_ROUTE, handler);
        const where = `${metatype.name}.${name}`;
        if (!invoke) {
          if (method === RequestMethod.GET || method === RequestMethod.ALL) {
            for (const b of [base].flat()) for (const p of [path].flat()) others.push(toSegments(API_PREFIX, b, p));
          }
          continue;
        }
        const scope = this.reflector.getAllAndOverride<string | undefined>(REQUIRED_SCOPE, [handler, metatype]);
        if (method !== RequestMethod.GET || typeof path !== 'string' || Array.isArray(base)) {
          throw new Error(`@HotRoute on ${where}: only GET routes with one path can be hot`);
        }
        if (!scope || this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [handler, metatype])) {
          throw new Error(`@HotRoute on ${where}: only routes that require a scope can be hot`);
        }
        hot.push({ segments: toSegments(API_PREFIX, base, path), scope, controller: instance, invoke });
      }
    }
    // the router tries routes in registration order: a hot template that
    // another GET route could also match might take that route's requests
    for (const route of hot) {
      if (others.some((other) => overlaps(route.segments, other)) || hot.some((h) => h !== route && overlaps(route.segments, h.segments))) {
        throw new Error(`@HotRoute /${route.segments.map((s) => ('literal' in s ? s.literal : `:${s.param}`)).join('/')} overlaps another GET route`);
      }
    }
    this.routes = hot;
  }

  /** Puts the hot path in front of the server's one request listener (the framework's). */
  install(server: Server): void {
    const listeners = server.listeners('request') as RequestListener[];
    if (listeners.length !== 1) throw new Error(`expected one request listener on the HTTP server, found ${listeners.length}`);
    const framework = listeners[0];
    server.removeListener('request', framework);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const match = this.match(req);
      if (!match) return framework.call(server, req, res);
      this.serve(match.route, match.params, req, res).then(
        (served) => {
          if (!served) framework.call(server, req, res);
        },
        // serve() answers every error itself; this is a last resort
        (error: unknown) => {
          this.logger.error({ err: { message: (error as Error).message } }, 'hot route failed');
          if (!res.headersSent) framework.call(server, req, res);
        },
      );
    });
  }

  /** The hot route this request is a plain call of, or null. */
  private match(req: IncomingMessage): { route: CompiledRoute; params: Record<string, string> } | null {
    if (req.method !== 'GET' || this.routes.length === 0) return null;
    // a body on a GET is the framework's to parse (and refuse)
    if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) return null;
    const url = req.url;
    if (!url || url.includes('?') || !url.startsWith('/') || url.endsWith('/')) return null;
    const parts = url.slice(1).split('/');
    for (const route of this.routes) {
      if (route.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let matched = true;
      for (let i = 0; i < parts.length && matched; i++) {
        const segment = route.segments[i];
        if ('literal' in segment) matched = segment.literal === parts[i];
        else if ((matched = PLAIN_PARAM.test(parts[i]))) params[segment.param] = parts[i];
      }
      if (matched) return { route, params };
    }
    return null;
  }

  /** Answers the request, or returns false (before anything is counted or sent) to leave it to the framework. */
  private async serve(route: CompiledRoute, params: Record<string, string>, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const ctx = beginRequest(req, res, this.logger);
    let auth: AuthContext;
    try {
      auth = await this.keys.authenticate(req.headers.authorization);
    } catch {
      return false;
    }
    ctx.auth = auth;
    try {
      await this.limiter.consume(ctx, res, auth);
      authorize(auth, route.scope, req.method);
      const result = await route.invoke(route.controller, auth, params);
      send(res, 200, envelope(result, ctx.requestId));
    } catch (exception) {
      const error = resolveApiError(exception, ctx.requestId, this.logger);
      for (const [name, value] of Object.entries(error.headers ?? {})) res.setHeader(name, value);
      send(res, error.status, renderErrorBody(error, ctx.requestId));
    }
    return true;
  }
}

/** What the framework's JSON reply writes: status, JSON content type with charset, length, body. */
function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
