import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AppLogger } from './logger';

/** What the service hangs on a request as it passes the middleware and guards. */
export interface AuthContext {
  keyId: string;
  orgId: string;
  orgStatus: string;
  orgPlan: string;
  scopes: ReadonlySet<string>;
}

export interface RequestContext extends IncomingMessage {
  requestId: string;
  auth?: AuthContext;
  /** raw body bytes, kept by the body parser for idempotency fingerprints */
  rawBody?: Buffer;
  body?: unknown;
  query?: Record<string, unknown>;
  params?: Record<string, string>;
}

export const REQUEST_ID_HEADER = 'X-Request-ID';
const WELL_FORMED_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Keeps a well-formed incoming X-Request-ID (1–128 visible ASCII), otherwise makes one. */
export function resolveRequestId(incoming: string | string[] | undefined): string {
  const value = Array.isArray(incoming) ? incoming[0] : incoming;
  return value && WELL_FORMED_REQUEST_ID.test(value) ? value : `req_${randomUUID().replace(/-/g, '')}`;
}

/**
 * Starts a request: assigns the request id before routing, so every
 * response, unknown routes and parser errors included, carries it, and logs
 * one line when the response is finished. Idempotent: a request the hot-route
 * dispatcher began and then handed to the full pipeline is begun once.
 */
export function beginRequest(req: IncomingMessage, res: ServerResponse, logger: AppLogger): RequestContext {
  const ctx = req as RequestContext;
  if (ctx.requestId !== undefined) return ctx;
  const started = process.hrtime.bigint();
  ctx.requestId = resolveRequestId(req.headers['x-request-id']);
  res.setHeader(REQUEST_ID_HEADER, ctx.requestId);
  // the URL as received: routing rewrites req.url (a 404 under the prefix logged "/org")
  const url = req.url ?? '';
  res.on('finish', () => {
    const queryAt = url.indexOf('?');
    logger.info(
      {
        request_id: ctx.requestId,
        method: req.method,
        path: queryAt === -1 ? url : url.slice(0, queryAt),
        status: res.statusCode,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        org_id: ctx.auth?.orgId,
        key_id: ctx.auth?.keyId,
      },
      'request',
    );
  });
  return ctx;
}

/** First middleware of the chain: {@link beginRequest}. */
export function requestContextMiddleware(logger: AppLogger) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    beginRequest(req, res, logger);
    next();
  };
}
