import { Client } from 'pg';
import type { AppConfig } from '../config/config';

/**
 * What the service changes when a pooler in transaction mode (PgBouncer's
 * `pool_mode = transaction`) sits between it and the PostgreSQL server. Such
 * a pooler hands each transaction, and each statement outside one, to
 * whichever server connection is free, so nothing may live on a connection
 * beyond one transaction: no named prepared statements (a second connection
 * does not have them, or already has one by that name), no session settings,
 * no session-scoped locks. Poolers without protocol-level support for prepared
 * statements (PgBouncer before 1.21) also reject startup parameters they do not
 * track, `statement_timeout` among them.
 */

/** Whether the service must keep nothing on a server connection between transactions. */
export function poolerSafe(config: Pick<AppConfig, 'databasePooler'>): boolean {
  return config.databasePooler === 'transaction';
}

/** Arbitrary constant shared by every instance: serializes migrations across processes. */
export const MIGRATION_LOCK_KEY = 7_214_091_337;

/**
 * Runs `fn` (the migrations) while this process holds the migration lock, so
 * that instances starting together migrate one at a time and the later ones
 * find nothing to do. The lock is transaction-scoped and held by a connection
 * of its own, which does nothing but keep that transaction open: a pooler in
 * transaction mode keeps one server connection for it until it ends, and a
 * crashed process's lock ends with its connection. A session-scoped lock
 * taken through such a pooler stays on whichever server connection ran it,
 * and its unlock may run on another. The wait is not bounded by the statement
 * timeout: another instance's migrations may take longer than one statement.
 */
export async function withMigrationLock<T>(connectionString: string, fn: () => Promise<T>): Promise<T> {
  const holder = new Client({ connectionString, application_name: 'migration lock' });
  // a dropped connection fails the pending query (and so the start-up); without a listener it would crash the process
  holder.on('error', () => undefined);
  await holder.connect();
  try {
    await holder.query('begin');
    // a literal, not a parameter: after an extended-protocol query the idle transaction keeps its
    // snapshot's xmin, and CREATE INDEX CONCURRENTLY on the migrations' own connection waits for it forever
    await holder.query(`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    const result = await fn();
    await holder.query('commit');
    return result;
  } finally {
    await holder.end().catch(() => undefined);
  }
}
