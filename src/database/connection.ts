import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { packageRoot } from '../common/package-root';
import type { AppConfig } from '../config/config';
import type { Database, Transaction } from './database.types';
import { applyMigrations } from './migration-runner';
import { drizzlePgliteClient } from './pglite-client';
import { PgliteDirectoryLock } from './pglite-lock';
import { PostgresConnections } from './pg-connections';
import { QueryErrorReporter } from './query-error-reporter';
import { poolerSafe, withMigrationLock } from './pooler';
import { executeRows } from './execute-rows';

/**
 * Extensions every embedded database is opened with. A data directory whose
 * migrations created a trigram index must be opened with pg_trgm loaded, so
 * everything that creates a PGlite (server, CLI, tests) passes these.
 */
export const PGLITE_EXTENSIONS = { pg_trgm };

export function migrationsFolder(): string {
  // compiled to dist/src/database, run from src/database under jest: the SQL stays in src/
  return join(packageRoot(), 'src', 'database', 'migrations');
}

interface ConnectionLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What the PostgreSQL pool holds right now (metrics read it at each scrape). */
interface PoolStats {
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
    /** drizzle's root database: every statement on it runs outside any transaction */
    readonly db: Database,
    private readonly closeFn: () => Promise<void>,
    private readonly migrateFn: () => Promise<void>,
    /** how a transaction is begun */
    private readonly beginTransaction: <T>(fn: (tx: Transaction) => Promise<T>) => Promise<T>,
    /** the embedded engine, for tests that copy a migrated database */
    readonly pglite: PGlite | null,
    /** every failed query, whichever engine (metrics subscribe) */
    readonly queryErrors: QueryErrorReporter,
    /** the server's connections (null on PGlite): the pool's counts are its gauges */
    private readonly postgres: PostgresConnections | null = null,
  ) {}

  /**
   * Runs `fn` in a new transaction, handed to it as `tx`: the statements on
   * `tx` run in it, those on `db` do not. It commits when `fn` resolves and
   * rolls back when it throws. The application's one caller is the adapter
   * of `@nestjs-cls/transactional` (src/database/transactions.ts): services
   * write `txHost.withTransaction(...)` and repositories `txHost.tx`
   * (docs/adding-a-module.md, "Transactions").
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.beginTransaction(fn);
  }

  static async open(config: AppConfig, logger: ConnectionLogger): Promise<DatabaseConnection> {
    return config.databaseUrl ? DatabaseConnection.openPostgres(config, logger) : DatabaseConnection.openPglite(config);
  }

  /** Wraps an existing PGlite (tests hand in a copy of a migrated template). */
  static fromPglite(client: PGlite, onClose: () => Promise<void> = () => client.close()): DatabaseConnection {
    const queryErrors = new QueryErrorReporter();
    const drizzleDb = drizzlePglite({ client: drizzlePgliteClient(client, queryErrors) });
    const db = drizzleDb as unknown as Database;
    const beginTransaction = <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> => drizzleDb.transaction((tx) => fn(tx as never));
    return new DatabaseConnection(
      'pglite',
      db,
      onClose,
      async () => {
        await applyMigrations(
          { exec: async (text) => void (await client.exec(text)), query: async (text, params) => (await client.query(text, params)).rows as never },
          migrationsFolder(),
          { concurrently: false },
        );
      },
      beginTransaction,
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
    const logError = (message: string) => (error: Error) =>
      logger.error({ err: { message: error.message, code: (error as { code?: string }).code } }, message);
    const postgres = new PostgresConnections(
      {
        connectionString: config.databaseUrl!,
        max: config.dbPoolMax,
        statementTimeoutMs: config.dbStatementTimeoutMs,
        poolerSafe: poolerSafe(config),
        idleTimeoutMillis: 30_000,
        keepAlive: true,
      },
      queryErrors,
      // the statement in flight on a failed connection fails on its own and becomes a 503
      { connectionError: logError('database connection failed'), idleError: logError('idle database client failed') },
    );
    const pool = postgres.pool;
    return new DatabaseConnection(
      'postgres',
      postgres.db,
      () => pool.end(),
      // one instance migrates at a time; the others wait, then find nothing to do. The migrations
      // run on a connection of their own, without the pool's statement and query timeouts: an
      // index build on a large table takes minutes, and an online migration must not be cut short
      () =>
        withMigrationLock(config.databaseUrl!, async () => {
          const client = new Client({ connectionString: config.databaseUrl!, application_name: 'migrations' });
          client.on('error', () => undefined);
          await client.connect();
          try {
            await applyMigrations(
              { exec: async (text) => void (await client.query(text)), query: async (text, params) => (await client.query(text, params)).rows },
              migrationsFolder(),
              { concurrently: true },
            );
          } finally {
            await client.end().catch(() => undefined);
          }
        }),
      (fn) => postgres.transaction(fn),
      null,
      queryErrors,
      postgres,
    );
  }

  /** Connections of the PostgreSQL pool: open, idle, and requests waiting for one (null on PGlite). */
  poolStats(): PoolStats | null {
    const pool = this.postgres?.pool;
    return pool ? { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max } : null;
  }

  migrate(): Promise<void> {
    return this.migrateFn();
  }

  /** How many migrations the database has recorded as applied (0 on a fresh database). */
  async appliedMigrations(): Promise<number> {
    try {
      const [row] = await executeRows<{ count: number }>(this.db, sql`select count(*)::int as count from drizzle.__drizzle_migrations`);
      return Number(row?.count ?? 0);
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
