import { pauseAfter, type JobWork } from '../common/scheduled-jobs';
import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { ApiError } from '../common/api-error';
import { LOGGER, type AppLogger } from '../common/logger';
import { IdempotencyRepository, type IdempotencyRecord } from './idempotency.repository';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** Stored records expire 24 hours after the first request */
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * The most a record's stored answer takes, as JSON text in UTF-8. No answer
 * the input bounds allow comes near it (the largest, an agent with every
 * field at its bound, is under 2.7 MB; docs/decisions.md, "Bounded storage"),
 * so every answer is stored whole and replayed exactly. Checked where a
 * record is written, here alone: an answer over it would mean a bound was
 * lost, and it is refused rather than stored (IdempotencyRecordTooLarge).
 */
export const MAX_RECORD_BYTES = 4 * 1024 * 1024;

/** An answer over MAX_RECORD_BYTES: not stored; its size is all that is told (the body may hold secrets). */
export class IdempotencyRecordTooLarge extends Error {
  constructor(readonly bytes: number) {
    super(`the answer takes ${bytes} bytes, over the ${MAX_RECORD_BYTES} an idempotency record may store`);
  }
}

export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH']);
const PURGE_BATCH_SIZE = 1000;

/**
 * 1 to 128 ASCII characters: every ASCII character a header value can
 * carry, i.e. the printable ones, space and horizontal tab (HTTP forbids the
 * other control characters; Node refuses them before the app runs). HTTP
 * strips leading and trailing whitespace from header values, so the key is
 * what remains; an all-blank header is an empty key and is rejected.
 */
const WELL_FORMED_KEY = /^[\t\x20-\x7e]{1,128}$/;

/** The header's value, null when absent, 422 `validation_failed` naming the header when malformed. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const value = Array.isArray(header) ? header.join(', ') : header;
  if (!WELL_FORMED_KEY.test(value)) {
    throw ApiError.validation(
      { [IDEMPOTENCY_KEY_HEADER]: ['must be 1 to 128 ASCII characters'] },
      `Invalid header: ${IDEMPOTENCY_KEY_HEADER} must be 1 to 128 ASCII characters.`,
    );
  }
  return value;
}

/**
 * SHA-256 over the method, the path (no query string) and the body
 * bytes as received — whitespace and key order matter, headers do not.
 */
export function requestFingerprint(method: string, path: string, rawBody: Buffer | undefined): string {
  return createHash('sha256')
    .update(method.toUpperCase())
    .update('\n')
    .update(path)
    .update('\n')
    .update(rawBody ?? Buffer.alloc(0))
    .digest('hex');
}

/** The size a stored answer is bounded by: its JSON text in UTF-8, as it is written to the store. */
export function recordBytes(body: unknown): number {
  return Buffer.byteLength(JSON.stringify(body) ?? '');
}

/** Which outcomes a retry must get again (see docs/decisions.md, "Idempotency"). */
export function isStorableStatus(status: number): boolean {
  if (status >= 200 && status < 300) return true;
  // the operation's own answers are final; auth, rate limits and faults are not, nor a failed
  // If-Match (412): the operation did not run, and a retry after re-reading must be able to
  return status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 412 && status !== 429;
}

@Injectable()
export class IdempotencyService {
  constructor(
    private readonly repository: IdempotencyRepository,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  findLive(orgId: string, key: string, now = new Date()): Promise<IdempotencyRecord | null> {
    return this.repository.findLive(orgId, key, now);
  }

  /**
   * Stores the outcome of the first request; false when another racer's
   * record was kept. Rejects with IdempotencyRecordTooLarge, storing nothing,
   * when the answer is over MAX_RECORD_BYTES.
   */
  async record(orgId: string, key: string, outcome: IdempotencyRecord, startedAt: Date): Promise<boolean> {
    const bytes = recordBytes(outcome.body);
    if (bytes > MAX_RECORD_BYTES) throw new IdempotencyRecordTooLarge(bytes);
    return this.repository.save(orgId, {
      key,
      ...outcome,
      createdAt: startedAt,
      expiresAt: new Date(startedAt.getTime() + IDEMPOTENCY_WINDOW_MS),
    });
  }

  /** Deletes every record expired at `now`, batch by batch; returns how many. */
  async purgeExpired(now = new Date(), batchSize = PURGE_BATCH_SIZE): Promise<number> {
    return (await this.purgeExpiredInBatches(now, batchSize)).rows;
  }

  /** The purge, with its batches (one DELETE statement each) and the longest of them. */
  async purgeExpiredInBatches(now = new Date(), batchSize = PURGE_BATCH_SIZE): Promise<JobWork> {
    const work: JobWork = { rows: 0, batches: 0, longestBatchMs: 0 };
    for (;;) {
      const started = performance.now();
      const deleted = await this.repository.deleteExpiredBatch(now, batchSize);
      work.longestBatchMs = Math.max(work.longestBatchMs, performance.now() - started);
      work.rows += deleted;
      work.batches += 1;
      if (deleted < batchSize) break;
      await pauseAfter(performance.now() - started);
    }
    if (work.rows > 0) this.logger.info({ deleted: work.rows, batches: work.batches }, 'purged expired idempotency records');
    return work;
  }
}
