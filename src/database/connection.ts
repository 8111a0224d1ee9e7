import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { migrate as migrateNodePg } from 'drizzle-orm/node-postgres/migrator';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, Pool } from 'pg';
import { packageRoot } from '../common/package-root';
import type { AppConfig } from '../config/config';
import type { Database } from './database.types';
import { drizzlePgliteClient } from './pglite-client';
import { PgliteDirectoryLock } from './pglite-lock';
import { QueryErrorReporter, reportingClientClass } from './query-errors';
import * as schema from './schema';

/**
 * Extensions every embedded database is opened with. A data directory whose
 * migrations created a trigram index must be opened with pg_trgm loaded, so
 * everything that creates a PGlite (server, CLI, tests) passes these.
 */
export const PGLITE_EXTENSIONS = { pg_trgm };

/** Arbitrary constant shared by every instance: serializes migrations across processes. */
const MIGRATION_LOCK_KEY = 7_214_091_337;

export function migrationsFolder(): string {
  // compiled to dist/src/database, run from src/database under jest: the SQL stays in src/
  return join(packageRoot(), 'src', 'database', 'migrations');
}

export interface ConnectionLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What the PostgreSQL pool holds right now (metrics read it at each scrape). */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

/** An open database of either engine, with what it takes to migrate and close it. */
export class DatabaseConnection {
  private closed = false;

  private constructor(
    readonly kind: 'pglite' | 'postgres',
    readonly db: Database,
    private readonly closeFn: () => Promise<void>,
    private readonly migrateFn: () => Promise<void>,
    /** the embedded engine, for tests that copy a migrated database */
    readonly pglite: PGlite | null,
    /** every failed query, whichever engine (metrics subscribe) */
    readonly queryErrors: QueryErrorReporter,
    /** the pool's counts; null on the embedded engine, which has no pool */
    readonly poolStats: (() => PoolStats) | null = null,
  ) {}

  static async open(config: AppConfig, logger: ConnectionLogger): Promise<DatabaseConnection> {
    return config.databaseUrl ? DatabaseConnection.openPostgres(config, logger) : DatabaseConnection.openPglite(config);
  }

  /** Wraps an existing PGlite (tests hand in a copy of a migrated template). */
  static fromPglite(client: PGlite, onClose: () => Promise<void> = () => client.close()): DatabaseConnection {
    const queryErrors = new QueryErrorReporter();
    const drizzleDb = drizzlePglite({ client: drizzlePgliteClient(client, queryErrors), schema });
    return new DatabaseConnection(
      'pglite',
      drizzleDb as unknown as Database,
      onClose,
      async () => {
        await migratePglite(drizzleDb, { migrationsFolder: migrationsFolder() });
      },
      client,
      queryErrors,
    );
  }

  private static async openPglite(config: AppConfig): Promise<DatabaseConnection> {
    if (config.pgliteDir === 'memory') {
      const client = await PGlite.create({ extensions: PGLITE_EXTENSIONS });
      return DatabaseConnection.fromPglite(client);
    }
    const dir = resolve(config.pgliteDir);
    const lock = PgliteDirectoryLock.acquire(dir);
    try {
      mkdirSync(dir, { recursive: true });
      const client = await PGlite.create({ dataDir: dir, extensions: PGLITE_EXTENSIONS });
      return DatabaseConnection.fromPglite(client, async () => {
        try {
          await client.close();
        } finally {
          lock.release();
        }
      });
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  private static async openPostgres(config: AppConfig, logger: ConnectionLogger): Promise<DatabaseConnection> {
    const queryErrors = new QueryErrorReporter();
    const pool = new Pool({
      connectionString: config.databaseUrl!,
      max: config.dbPoolMax,
      Client: reportingClientClass(Client, queryErrors),
      connectionTimeoutMillis: Math.min(config.dbStatementTimeoutMs, 5000),
      // client-side bound on every query: a hung server cannot pile requests up
      query_timeout: config.dbStatementTimeoutMs + 1000,
      statement_timeout: config.dbStatementTimeoutMs,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
    });
    // Without a listener an idle client's error (server restart) would crash the process.
    pool.on('error', (error) => logger.error({ err: { message: error.message, code: (error as { code?: string }).code } }, 'idle database client failed'));
    const db = drizzleNodePg(pool, { schema }) as unknown as Database;
    return new DatabaseConnection(
      'postgres',
      db,
      () => pool.end(),
      async () => {
        const client = await pool.connect();
        try {
          // one instance migrates at a time; the others wait, then find nothing to do
          await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
          try {
            await migrateNodePg(drizzleNodePg(client, { schema }), { migrationsFolder: migrationsFolder() });
          } finally {
            await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
          }
        } finally {
          client.release();
        }
      },
      null,
      queryErrors,
      () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: config.dbPoolMax }),
    );
  }

  migrate(): Promise<void> {
    return this.migrateFn();
  }

  /** How many migrations the database has recorded as applied (0 on a fresh database). */
  async appliedMigrations(): Promise<number> {
    try {
      // both drivers return `{ rows }`
      const result = (await this.db.execute(sql`select count(*)::int as count from drizzle.__drizzle_migrations`)) as unknown as { rows: Array<{ count: number }> };
      return Number(result.rows[0]?.count ?? 0);
    } catch (error) {
      // 3F000 no such schema, 42P01 no such table: nothing applied yet
      const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as { code?: string }).code;
      if (code === '3F000' || code === '42P01') return 0;
      throw error;
    }
  }

  async ping(): Promise<void> {
    await this.db.execute(sql`select 1`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.closeFn();
  }
}
