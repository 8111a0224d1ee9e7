import type { IncomingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import type { AuthenticationFailure } from '../auth/api-keys.service';

/** What the service hangs on a request as it passes the hooks and guards. */
export interface AuthContext {
  keyId: string;
  orgId: string;
  orgStatus: string;
  orgPlan: string;
  scopes: ReadonlySet<string>;
}

/**
 * The request as guards, interceptors, pipes and the filter see it. Only what
 * every HTTP platform offers (and src/http/ adds) is named here, so nothing
 * outside src/http/ depends on which platform serves the app.
 */
export interface RequestContext {
  /** set by the first request hook (src/http/request-hooks.ts), before routing and parsing */
  requestId: string;
  /** W3C trace id: the incoming `traceparent`'s, or a new one; set with the request id */
  traceId: string;
  /** set by the authentication guard (auth/authentication.guard.ts) for a valid key */
  auth?: AuthContext;
  /** set by the authentication guard for a missing or bad key; the authorization guard answers it (401) */
  authFailure?: AuthenticationFailure;
  /** set when the key could not be checked at all (the database): the authentication guard throws it */
  authError?: unknown;
  /** set by the tenant concurrency guard (common/tenant-concurrency.ts); called once the answer is sent */
  releaseTenantSlots?: () => void;
  /** the 503 of a tenant whose slots stayed busy, found before the body was read; the tenant concurrency guard throws it */
  tenantRefusal?: unknown;
  /** set by the tenant concurrency guard when the request waited in its tenant's queue: how long, and when its slots were taken */
  tenantQueue?: { waitedMs: number; until: number };
  /** the body bytes as received (decoded), for idempotency fingerprints */
  rawBody?: Buffer;
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
export function requestLogFields(request: RequestContext, status: number, durationMs: number): Record<string, unknown> {
  return {
    request_id: request.requestId,
    trace_id: request.traceId,
    method: request.method,
    path: pathOf(request.url),
    status,
    duration_ms: durationMs,
    org_id: request.auth?.orgId,
    key_id: request.auth?.keyId,
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
