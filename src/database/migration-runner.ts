import { readMigrationFiles, type MigrationMeta } from 'drizzle-orm/migrator';

/** The two calls the runner needs from a connection of either engine. */
export interface MigrationSession {
  /** one or more statements without parameters */
  exec(text: string): Promise<void>;
  query<T>(text: string, params?: unknown[]): Promise<T[]>;
}

/**
 * The first line of a migration that must run outside a transaction:
 * `CREATE INDEX CONCURRENTLY` / `DROP INDEX CONCURRENTLY` refuse to run inside
 * one, and they are what keeps an index change from blocking writes on a large
 * live table.
 */
const ONLINE_MARKER = '-- online migration';

const CONCURRENT_INDEX = /^\s*(?:--[^\n]*\n\s*)*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+"?([a-z0-9_]+)"?/i;

function isOnline(migration: MigrationMeta): boolean {
  return migration.sql[0]?.trimStart().startsWith(ONLINE_MARKER) ?? false;
}

/**
 * Applies the pending migrations of `folder`, recording them in drizzle's own
 * table (`drizzle.__drizzle_migrations`, same hash and timestamp), so a
 * database migrated by drizzle's migrator continues here and the reverse.
 * drizzle's migrator runs every pending file in one transaction and has no way
 * to leave one out of it; this runner does what it does for ordinary files
 * (one transaction per file) and runs an online file statement by statement
 * outside any transaction. An online file must be re-runnable: its statements
 * use IF [NOT] EXISTS, and an index a failed concurrent build left invalid is
 * dropped and built again. The caller serializes migrations (advisory lock).
 */
export async function applyMigrations(session: MigrationSession, folder: string, options: { concurrently: boolean }): Promise<number> {
  const migrations = readMigrationFiles({ migrationsFolder: folder });
  await session.exec(`CREATE SCHEMA IF NOT EXISTS "drizzle"; CREATE TABLE IF NOT EXISTS "drizzle"."__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`);
  const [last] = await session.query<{ created_at: string }>(`select created_at from "drizzle"."__drizzle_migrations" order by created_at desc limit 1`);
  const pending = migrations.filter((migration) => !last || Number(last.created_at) < migration.folderMillis);
  const record = `insert into "drizzle"."__drizzle_migrations" ("hash", "created_at") values ($1, $2)`;
  for (const migration of pending) {
    if (isOnline(migration)) {
      for (const statement of migration.sql) await runOnline(session, statement, options.concurrently);
      await session.query(record, [migration.hash, migration.folderMillis]);
      continue;
    }
    await session.exec('begin');
    try {
      for (const statement of migration.sql) await session.exec(statement);
      await session.query(record, [migration.hash, migration.folderMillis]);
      await session.exec('commit');
    } catch (error) {
      await session.exec('rollback');
      throw error;
    }
  }
  return pending.length;
}

async function runOnline(session: MigrationSession, statement: string, concurrently: boolean): Promise<void> {
  const index = CONCURRENT_INDEX.exec(statement)?.[1];
  if (index) {
    // a concurrent build that failed half way leaves an invalid index that IF NOT EXISTS would keep
    const [state] = await session.query<{ valid: boolean }>(`select indisvalid as valid from pg_index where indexrelid = to_regclass($1)`, [index]);
    if (state && !state.valid) await session.exec(`DROP INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF EXISTS "${index}"`);
  }
  // the embedded engine has a single connection and no concurrent writers to keep going
  await session.exec(concurrently ? statement : statement.replace(/\b(INDEX)\s+CONCURRENTLY\b/gi, '$1'));
}
