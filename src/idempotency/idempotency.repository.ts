import { Injectable } from '@nestjs/common';
import { and, asc, eq, gt, lte, sql } from 'drizzle-orm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { idempotencyRecords } from './idempotency.table';
import { prepareNamed } from '../database/prepared-statements';

export interface IdempotencyRecord {
  fingerprint: string;
  status: number;
  body: unknown;
}

interface NewIdempotencyRecord extends IdempotencyRecord {
  key: string;
  createdAt: Date;
  expiresAt: Date;
}

@Injectable()
export class IdempotencyRepository {
  private readonly liveByKey;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    // hot path: every POST/PATCH with a key reads this once
    this.liveByKey = prepareNamed(txHost, 'idempotency_record_live_by_key', (db) =>
      db
        .select({ fingerprint: idempotencyRecords.fingerprint, status: idempotencyRecords.status, body: idempotencyRecords.body })
        .from(idempotencyRecords)
        .where(
          and(
            eq(idempotencyRecords.orgId, sql.placeholder('orgId')),
            eq(idempotencyRecords.key, sql.placeholder('key')),
            gt(idempotencyRecords.expiresAt, sql`${sql.placeholder('now')}::timestamptz`),
          ),
        )
        .limit(1),
    );
  }

  /** The unexpired record of this key in this organization, if any. */
  async findLive(orgId: string, key: string, now: Date): Promise<IdempotencyRecord | null> {
    const rows = await this.liveByKey.execute({ orgId, key, now: now.toISOString() });
    return rows[0] ?? null;
  }

  /**
   * Stores the outcome unless a live record already holds the key (the other
   * racer won). Two exceptions replace the existing row: it has expired (the
   * key executes fresh), or it holds a non-2xx outcome of the same request
   * and this one is a success — so that replays agree with the database.
   * Returns whether this outcome is the stored one.
   */
  async save(orgId: string, record: NewIdempotencyRecord): Promise<boolean> {
    const t = idempotencyRecords;
    const stored = await this.txHost.tx
      .insert(t)
      .values({ orgId, ...record })
      .onConflictDoUpdate({
        target: [t.orgId, t.key],
        set: {
          fingerprint: sql`excluded.fingerprint`,
          status: sql`excluded.status`,
          body: sql`excluded.body`,
          createdAt: sql`excluded.created_at`,
          expiresAt: sql`excluded.expires_at`,
        },
        setWhere: sql`${t.expiresAt} <= excluded.created_at
          or (${t.fingerprint} = excluded.fingerprint
              and ${t.status} not between 200 and 299
              and excluded.status between 200 and 299)`,
      })
      .returning({ key: t.key });
    return stored.length === 1;
  }

  /**
   * Deletes up to `limit` expired records of any organization (the purge job
   * is the one caller that is not scoped to an organization). SKIP LOCKED lets
   * several instances purge at once without waiting on each other.
   */
  async deleteExpiredBatch(now: Date, limit: number): Promise<number> {
    const t = idempotencyRecords;
    const batch = this.txHost.tx
      .select({ orgId: t.orgId, key: t.key })
      .from(t)
      .where(lte(t.expiresAt, sql`${now.toISOString()}::timestamptz`))
      .orderBy(asc(t.expiresAt))
      .limit(limit)
      .for('update', { skipLocked: true });
    const deleted = await this.txHost.tx
      .delete(t)
      .where(sql`(${t.orgId}, ${t.key}) in (${batch})`)
      .returning({ key: t.key });
    return deleted.length;
  }
}
