import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { from, lastValueFrom, mergeMap, of, type Observable } from 'rxjs';
import { ApiError, ErrorCode } from '../common/api-error';
import { apiErrorOf, renderErrorBody } from '../http/error-body';
import { LOGGER, loggableError, type AppLogger } from '../common/logger';
import { pathOf, requestContext, type HttpRequest, type RequestStore } from '../common/request-context';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { Metrics } from '../metrics/metrics';
import type { IdempotencyRecord } from './idempotency.repository';
import {
  IDEMPOTENT_METHODS,
  IDEMPOTENT_REPLAYED_HEADER,
  IdempotencyRecordTooLarge,
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

interface Attempt {
  orgId: string;
  key: string;
  fingerprint: string;
  startedAt: Date;
  request: RequestStore;
  response: unknown;
}

/**
 * `Idempotency-Key` on every POST and PATCH. Registered
 * as the outermost interceptor, so it sees the enveloped body, and after the
 * guards, so 401/403/429 answers are never stored and a replay still counts
 * against the rate limit.
 *
 *  no record          → run in one transaction with the record of its 2xx;
 *                       a 4xx of the operation is stored after the rollback
 *  record, same print → replay it (new meta.request_id, Idempotent-Replayed)
 *  record, other print→ 409 idempotency_key_reused
 *  a racer won        → this attempt rolls back and replays the winner's record
 *  store unreachable  → 503 before running: never a second execution
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly txHost: TransactionHost<DatabaseTransactions>,
    @Inject(LOGGER) private readonly logger: AppLogger,
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: Metrics,
  ) {}

  /** Synchronous for the requests it leaves alone (every read): Nest awaits only an interceptor's promise. */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> | Promise<Observable<unknown>> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequest>();
    const caller = requestContext();
    const method = (request.method ?? 'GET').toUpperCase();
    // GET and DELETE ignore the header; public routes have no organization to scope it to
    if (!IDEMPOTENT_METHODS.has(method) || !caller.auth) return next.handle();
    const key = parseIdempotencyKey(request.headers['idempotency-key']);
    if (key === null) return next.handle();
    return this.interceptKeyed(request, caller, http.getResponse<{ statusCode: number }>(), method, caller.auth.orgId, key, next);
  }

  private async interceptKeyed(
    request: HttpRequest,
    caller: RequestStore,
    response: { statusCode: number },
    method: string,
    orgId: string,
    key: string,
    next: CallHandler,
  ): Promise<Observable<unknown>> {
    const startedAt = new Date();
    const fingerprint = requestFingerprint(method, pathOf(request.url), caller.rawBody);

    let existing: IdempotencyRecord | null;
    try {
      existing = await this.idempotency.findLive(orgId, key, startedAt);
    } catch (error) {
      this.logger.warn({ err: loggableError(error) }, 'idempotency store unavailable');
      throw new ApiError(
        ErrorCode.ServiceUnavailable,
        'The idempotency store is temporarily unavailable; the request was not executed. Retry with the same key.',
        undefined,
        { 'Retry-After': '1' },
      );
    }
    if (existing) {
      if (existing.fingerprint !== fingerprint) throw this.keyReused();
      return this.replay(existing, caller, response);
    }

    // Nest sets the route's success status before the interceptors run
    const successStatus = response.statusCode;
    const attempt: Attempt = { orgId, key, fingerprint, startedAt, request: caller, response };
    return from(this.execute(attempt, successStatus, next)).pipe(mergeMap((outcome) => outcome));
  }

  /**
   * The write and its record commit together: one request transaction that
   * every query of the handler joins (docs/decisions.md, "One transaction per
   * keyed write"). If it commits, a retry replays it; if it does not, nothing
   * of it is stored. This is where each keyed request's outcome is decided.
   */
  private async execute(attempt: Attempt, successStatus: number, next: CallHandler): Promise<Observable<unknown>> {
    const { fingerprint } = attempt;
    // counted once this attempt's own outcome is the answer: a racer that
    // answers with the winner's record is counted replayed or conflict instead
    const executed = () => this.metrics.idempotencyOutcome('executed');
    try {
      const body = await this.txHost.withTransaction(async () => {
        const result = await lastValueFrom(next.handle(), { defaultValue: undefined });
        const stored = await this.recordInTransaction(attempt, { fingerprint, status: successStatus, body: result });
        // a concurrent request with this key committed first: undo this one's write, answer that one's
        if (!stored) throw new LostRace();
        return result;
      });
      executed();
      return of(body);
    } catch (error) {
      if (error instanceof LostRace) return this.answerWithWinner(attempt, error);
      const apiError = apiErrorOf(error);
      // the operation's own 4xx, rolled back: stored in its own statement, never over a live record
      if (!apiError || !isStorableStatus(apiError.status)) {
        executed();
        throw error;
      }
      const stored = await this.store(attempt, { fingerprint, status: apiError.status, body: renderErrorBody(apiError, attempt.request.requestId) });
      if (stored !== false) {
        executed();
        throw error;
      }
      // another attempt of this key committed meanwhile (e.g. this one's 409 is that attempt's handle)
      return this.answerWithWinner(attempt, error);
    }
  }

  /** The live record another attempt of this key stored: replayed (or 409 when it was another request). */
  private async answerWithWinner(attempt: Attempt, error: unknown): Promise<Observable<unknown>> {
    let winner: IdempotencyRecord | null = null;
    try {
      winner = await this.idempotency.findLive(attempt.orgId, attempt.key, attempt.startedAt);
    } catch (lookupError) {
      this.logger.warn({ err: loggableError(lookupError) }, 'idempotency store unavailable');
    }
    if (!winner) {
      if (!(error instanceof LostRace)) throw error;
      throw new ApiError(ErrorCode.ServiceUnavailable, 'The request was not executed. Retry with the same key.', undefined, { 'Retry-After': '1' });
    }
    if (winner.fingerprint !== attempt.fingerprint) throw this.keyReused();
    return this.replay(winner, attempt.request, attempt.response);
  }

  private keyReused(): ApiError {
    this.metrics.idempotencyOutcome('conflict');
    return keyReused();
  }

  private replay(record: IdempotencyRecord, request: RequestStore, response: unknown): Observable<unknown> {
    this.metrics.idempotencyOutcome('replayed');
    this.adapterHost.httpAdapter.setHeader(response, IDEMPOTENT_REPLAYED_HEADER, 'true');
    const stored = record.body as StoredEnvelope;
    if (stored.error && ERROR_CODES.has(stored.error.code)) {
      // the filter renders it again, with this request's request_id
      throw new ApiError(stored.error.code as ErrorCode, stored.error.message, stored.error.details);
    }
    if (stored.meta) return of({ ...stored, meta: { ...stored.meta, request_id: request.requestId } });
    return of(stored);
  }

  /** The success's record, in the write's transaction; failing, both roll back and the client retries. */
  private async recordInTransaction(attempt: Attempt, outcome: IdempotencyRecord): Promise<boolean> {
    try {
      return await this.idempotency.record(attempt.orgId, attempt.key, outcome, attempt.startedAt);
    } catch (error) {
      if (error instanceof IdempotencyRecordTooLarge) {
        // a lost input bound, not a passing fault: a retry would fail alike, so no 503
        this.logger.error({ bytes: error.bytes }, 'idempotency record over its bound; the write is rolled back');
        throw new ApiError(ErrorCode.InternalError, 'The answer could not be recorded, and the request was rolled back.');
      }
      this.logger.warn(
        // not the query error's message: its parameters are the response body being stored
        { err: loggableError(error) },
        'idempotency record not stored; the write is rolled back',
      );
      throw new ApiError(ErrorCode.ServiceUnavailable, 'The request could not be recorded and was rolled back. Retry with the same key.', undefined, {
        'Retry-After': '1',
      });
    }
  }

  /**
   * Stores a 4xx outcome after its transaction rolled back: true when stored,
   * false when a live record of this key was there first, null when the store
   * failed — logged, and the client still gets the real answer (the operation
   * changed nothing, so a retry running it again is harmless).
   */
  private async store(attempt: Attempt, outcome: IdempotencyRecord): Promise<boolean | null> {
    try {
      return await this.idempotency.record(attempt.orgId, attempt.key, outcome, attempt.startedAt);
    } catch (error) {
      this.logger.warn(
        // not the query error's message: its parameters are the response body being stored
        { err: loggableError(error) },
        'idempotency record not stored; the response is sent anyway',
      );
      return null;
    }
  }
}

/** Thrown inside the request transaction to roll it back when another attempt's record won. */
class LostRace extends Error {
  constructor() {
    super('another request with this Idempotency-Key committed first');
  }
}

function keyReused(): ApiError {
  return new ApiError(
    ErrorCode.IdempotencyKeyReused,
    'This Idempotency-Key was used in the last 24 hours for a different request (method, path or body).',
  );
}
