import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { catchError, mergeMap, of, type Observable } from 'rxjs';
import { ApiError, ErrorCode } from '../common/api-error';
import { knownApiError, renderErrorBody, summarizeError } from '../common/error-body';
import { LOGGER, type AppLogger } from '../common/logger';
import type { RequestContext } from '../common/request-context';
import type { IdempotencyRecord } from './idempotency.repository';
import {
  IDEMPOTENT_METHODS,
  IDEMPOTENT_REPLAYED_HEADER,
  IdempotencyService,
  isStorableStatus,
  parseIdempotencyKey,
  requestFingerprint,
} from './idempotency.service';

const ERROR_CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

interface StoredEnvelope {
  data?: unknown;
  meta?: Record<string, unknown>;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

function pathOf(url: string | undefined): string {
  const value = url ?? '/';
  const queryAt = value.indexOf('?');
  return queryAt === -1 ? value : value.slice(0, queryAt);
}

/**
 * `Idempotency-Key` on every POST and PATCH (spec, "Idempotency"). Registered
 * as the outermost interceptor, so it sees the enveloped body, and after the
 * guards, so 401/403/429 answers are never stored and a replay still counts
 * against the rate limit.
 *
 *  no record          → run; store the status and body (2xx, and the 4xx the
 *                       operation itself answered), then respond
 *  record, same print → replay it (new meta.request_id, Idempotent-Replayed)
 *  record, other print→ 409 idempotency_key_reused
 *  store unreachable  → 503 before running: never a second execution
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly idempotency: IdempotencyService,
    @Inject(LOGGER) private readonly logger: AppLogger,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<RequestContext>();
    const response = http.getResponse<{ statusCode: number }>();
    const method = (request.method ?? 'GET').toUpperCase();
    // spec: GET and DELETE ignore the header; public routes have no organization to scope it to
    if (!IDEMPOTENT_METHODS.has(method) || !request.auth) return next.handle();
    const key = parseIdempotencyKey(request.headers['idempotency-key']);
    if (key === null) return next.handle();

    const orgId = request.auth.orgId;
    const startedAt = new Date();
    const fingerprint = requestFingerprint(method, pathOf(request.url), request.rawBody);

    let existing: IdempotencyRecord | null;
    try {
      existing = await this.idempotency.findLive(orgId, key, startedAt);
    } catch (error) {
      this.logger.warn({ request_id: request.requestId, err: summarizeError(error) }, 'idempotency store unavailable');
      throw new ApiError(
        ErrorCode.ServiceUnavailable,
        'The idempotency store is temporarily unavailable; the request was not executed. Retry with the same key.',
        undefined,
        { 'Retry-After': '1' },
      );
    }
    if (existing) {
      if (existing.fingerprint !== fingerprint) {
        throw new ApiError(
          ErrorCode.IdempotencyKeyReused,
          'This Idempotency-Key was used in the last 24 hours for a different request (method, path or body).',
        );
      }
      return this.replay(existing, request, response);
    }

    // Nest sets the route's success status before the interceptors run
    const successStatus = response.statusCode;
    const store = (status: number, body: unknown) => this.store(orgId, key, { fingerprint, status, body }, startedAt, request);
    return next.handle().pipe(
      mergeMap(async (body: unknown) => {
        await store(successStatus, body);
        return body;
      }),
      catchError(async (error: unknown) => {
        const apiError = knownApiError(error);
        if (apiError && isStorableStatus(apiError.status)) await store(apiError.status, renderErrorBody(apiError, request.requestId));
        throw error;
      }),
    );
  }

  private replay(record: IdempotencyRecord, request: RequestContext, response: unknown): Observable<unknown> {
    this.adapterHost.httpAdapter.setHeader(response, IDEMPOTENT_REPLAYED_HEADER, 'true');
    const stored = record.body as StoredEnvelope;
    if (stored.error && ERROR_CODES.has(stored.error.code)) {
      // the filter renders it again, with this request's request_id
      throw new ApiError(stored.error.code as ErrorCode, stored.error.message, stored.error.details);
    }
    if (stored.meta) return of({ ...stored, meta: { ...stored.meta, request_id: request.requestId } });
    return of(stored);
  }

  /**
   * The operation has run: a failure to record it must not turn its answer
   * into an error (a retry would then run it again), so it is logged.
   */
  private async store(orgId: string, key: string, outcome: IdempotencyRecord, startedAt: Date, request: RequestContext): Promise<void> {
    try {
      await this.idempotency.record(orgId, key, outcome, startedAt);
    } catch (error) {
      this.logger.warn(
        // not the query error's message: its parameters are the response body being stored
        { request_id: request.requestId, err: summarizeError(error) },
        'idempotency record not stored; the response is sent anyway',
      );
    }
  }
}
