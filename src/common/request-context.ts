import type { IncomingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import { ClsServiceManager, type ClsStore } from 'nestjs-cls';
import { ApiError, ErrorCode } from './api-error';

/** Who is calling, once the authentication guard found a valid key. */
export interface AuthContext {
  keyId: string;
  orgId: string;
  orgStatus: string;
  orgPlan: string;
  scopes: ReadonlySet<string>;
}

/** Why a key does not authenticate: a closed set, the label of the auth failures metric. */
export type AuthFailureReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired';

/**
 * The 401 of a key that does not authenticate, with the reason for the
 * metrics. The response is the same for every reason but an expired key.
 */
export class AuthenticationFailure extends ApiError {
  constructor(
    readonly reason: AuthFailureReason,
    message: string,
  ) {
    super(ErrorCode.Unauthorized, message);
  }
}

/**
 * Everything the service knows about the request it is serving, in one
 * place: nestjs-cls's context, opened by the first request hook
 * (src/http/request-hooks.ts) and carried from there to every hook, guard,
 * interceptor, service, repository and log line of the request.
 */
export interface RequestStore extends ClsStore {
  /** the incoming X-Request-ID if well formed, else a new one */
  requestId: string;
  /** W3C trace id: the incoming `traceparent`'s, or a new one */
  traceId: string;
  /** set by the authentication guard for a valid key */
  auth?: AuthContext;
  /** set by the authentication guard for a missing or bad key: it answers 401 */
  authFailure?: AuthenticationFailure;
  /** set when the key could not be checked at all (the database): the authentication guard throws it */
  authError?: unknown;
  /** set by the tenant concurrency guard; called once the answer is sent */
  releaseTenantSlots?: () => void;
  /** the 503 of a tenant whose slots stayed busy, found before the body was read; the tenant concurrency guard throws it */
  tenantRefusal?: unknown;
  /** set when the request waited in its tenant's queue: how long, and when its slots were taken */
  tenantQueue?: { waitedMs: number; until: number };
  /** the body bytes as received (decoded), for idempotency fingerprints */
  rawBody?: Buffer;
  /**
   * epoch milliseconds by which every query of the request (pool wait
   * included) ends; null: only the per-query bound applies
   */
  databaseDeadline: number | null;
}

/** The context of the request being served, or undefined outside one (jobs, the CLI, start-up). */
export function activeRequestContext(): RequestStore | undefined {
  const cls = ClsServiceManager.getClsService<RequestStore>();
  return cls.isActive() ? cls.get() : undefined;
}

/** The context of the request being served; only code that runs while serving one calls it. */
export function requestContext(): RequestStore {
  const store = activeRequestContext();
  if (store === undefined) throw new Error('no request is being served here: requestContext() is for the request pipeline');
  return store;
}

/** The fields every log line written while serving a request carries (the logger's mixin, common/logger.ts). */
export function requestLogContext(): Record<string, string> {
  const context = activeRequestContext();
  // a new object each time: pino merges the line's own fields into it
  return context ? { request_id: context.requestId, trace_id: context.traceId } : {};
}

/** Runs `fn` (the rest of the request's pipeline) in a new request context. */
export function runInRequestContext<T>(store: RequestStore, fn: () => T): T {
  return ClsServiceManager.getClsService<RequestStore>().runWith(store, fn);
}

/**
 * The request as guards, interceptors, pipes and the filter see it: what
 * every HTTP platform offers. Nothing of ours is added to it; what the
 * service knows about the request is its {@link RequestStore}.
 */
export interface HttpRequest {
  body?: unknown;
  query?: Record<string, unknown>;
  params?: Record<string, string>;
  headers: IncomingHttpHeaders;
  method: string;
  /** path and query as received */
  url: string;
  socket?: { remoteAddress?: string };
  /**
   * the client's address: the connection's own, or, for a connection from a
   * proxy listed in TRUSTED_PROXIES, the one its X-Forwarded-For names
   */
  ip?: string;
}

export const REQUEST_ID_HEADER = 'X-Request-ID';
const WELL_FORMED_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Keeps a well-formed incoming X-Request-ID (1–128 visible ASCII), otherwise makes one. */
export function resolveRequestId(incoming: string | string[] | undefined): string {
  const value = Array.isArray(incoming) ? incoming[0] : incoming;
  return value && WELL_FORMED_REQUEST_ID.test(value) ? value : `req_${randomUUID().replace(/-/g, '')}`;
}

/** The path part of a request target. */
export function pathOf(url: string | undefined): string {
  const value = url ?? '/';
  const queryAt = value.indexOf('?');
  return queryAt === -1 ? value : value.slice(0, queryAt);
}

/** The fields of the one log line written per request (when its response is finished). */
export function requestLogFields(
  context: Pick<RequestStore, 'requestId' | 'traceId' | 'auth'>,
  request: Pick<HttpRequest, 'method' | 'url'>,
  status: number,
  durationMs: number,
): Record<string, unknown> {
  return {
    request_id: context.requestId,
    trace_id: context.traceId,
    method: request.method,
    path: pathOf(request.url),
    status,
    duration_ms: durationMs,
    org_id: context.auth?.orgId,
    key_id: context.auth?.keyId,
  };
}

/**
 * The query string as the controllers receive it: `a=1&a=2` gives an array
 * (so repeated parameters can be refused), `metadata[k]=v` stays the flat key
 * `metadata[k]` (the conversation list reads those itself), `+` is a space.
 * Node's own parser, so every platform hands over the same object.
 */
export function parseQueryString(query: string): Record<string, string | string[]> {
  return parseQuery(query) as Record<string, string | string[]>;
}
