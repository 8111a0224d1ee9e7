import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg, NodePgSession } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, Pool, type PoolClient, type PoolConfig } from 'pg';
import { packageRoot } from '../common/package-root';
import type { AppConfig } from '../config/config';
import type { Database, Transaction } from './database.types';
import { applyMigrations } from './migration-runner';
import { drizzlePgliteClient } from './pglite-client';
import { PgliteDirectoryLock } from './pglite-lock';
import { QueryErrorReporter, reportingClientClass } from './query-errors';
import { currentScope, openRequestTransaction, remainingMs, runInScope, type RequestTransaction } from './request-scope';
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

  /** the root database's own `transaction`, which `db.transaction` calls outside a request transaction */
  private readonly rootTransaction: Database['transaction'];

  private constructor(
    readonly kind: 'pglite' | 'postgres',
    readonly db: Database,
    private readonly closeFn: () => Promise<void>,
    private readonly migrateFn: () => Promise<void>,
    /** the embedded engine, for tests that copy a migrated database */
    readonly pglite: PGlite | null,
    /** every failed query, whichever engine (metrics subscribe) */
    readonly queryErrors: QueryErrorReporter,
    /** the server pool (null on PGlite): its counts are the pool's gauges */
    private readonly pool: Pool | null = null,
    /** how a root transaction is run, when not drizzle's own */
    rootTransaction?: Database['transaction'],
  ) {
    this.rootTransaction = rootTransaction ?? db.transaction.bind(db);
    // Every transaction is ambient: inside one, queries on the root db join it, and a
    // further `db.transaction(...)` is a savepoint of it (see request-scope.ts).
    db.transaction = ((fn: (tx: Transaction) => Promise<unknown>, config?: Parameters<Database['transaction']>[1]) => {
      const open = openRequestTransaction();
      return open ? open.tx.transaction(fn) : this.ambientTransaction(fn, config);
    }) as Database['transaction'];
  }

  /**
   * Runs `fn` in one transaction that every query of the current request
   * joins (see request-scope.ts and docs/decisions.md, "One transaction per
   * keyed write"): it commits when `fn` resolves, rolls back when it throws.
   */
  requestTransaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.ambientTransaction(() => fn());
  }

  private ambientTransaction<T>(fn: (tx: Transaction) => Promise<T>, config?: Parameters<Database['transaction']>[1]): Promise<T> {
    const deadline = currentScope()?.deadline ?? null;
    return this.rootTransaction(async (tx: Transaction) => {
      // the driver connection drizzle runs `tx` on: the one prepared statements on the root db must use too
      const transaction: RequestTransaction = { tx, client: (tx as unknown as { session: { client: unknown } }).session.client, open: true };
      try {
        return await runInScope({ deadline, transaction }, () => fn(tx));
      } finally {
        transaction.open = false;
      }
    }, config);
  }

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
        await applyMigrations(
          { exec: async (text) => void (await client.exec(text)), query: async (text, params) => (await client.query(text, params)).rows as never },
          migrationsFolder(),
          { concurrently: false },
        );
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
    const pool = new RequestPool({
      connectionString: config.databaseUrl!,
      max: config.dbPoolMax,
      Client: reportingClientClass(BoundedClient, queryErrors),
      connectionTimeoutMillis: Math.min(config.dbStatementTimeoutMs, 5000),
      // client-side bound on every query: a hung server cannot pile requests up
      query_timeout: config.dbStatementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
      statement_timeout: config.dbStatementTimeoutMs,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
    });
    const logError = (message: string) => (error: Error) =>
      logger.error({ err: { message: error.message, code: (error as { code?: string }).code } }, message);
    // node-postgres emits 'error' on a client whose connection drops (server stopped, backend
    // terminated). The pool listens only while a client is idle: a client checked out between
    // two statements of a transaction had no listener, and the process died. Every client gets
    // one for its whole life, at creation; the query in flight fails on its own and becomes a 503.
    pool.on('connect', (client) => client.on('error', logError('database connection failed')));
    pool.on('error', logError('idle database client failed'));
    const db = drizzleNodePg(pool, { schema }) as unknown as Database;
    // drizzle's transaction over a pool sends BEGIN before its try/finally that releases the
    // client: a BEGIN that fails (timeout, deadline, dropped connection) leaked the client, and
    // the pool shrank for good. Here the client is taken and released around the whole of it.
    const root = (db as unknown as { session: { dialect: unknown; schema: unknown; options: unknown } }).session;
    const rootTransaction = (async (fn: (tx: Transaction) => Promise<unknown>, config?: Parameters<Database['transaction']>[1]) => {
      const client = await pool.connect();
      try {
        const session = new NodePgSession(client, root.dialect as never, root.schema as never, root.options as never);
        return await session.transaction(fn as never, config);
      } finally {
        client.release();
      }
    }) as Database['transaction'];
    return new DatabaseConnection(
      'postgres',
      db,
      () => pool.end(),
      async () => {
        // a connection of their own, without the pool's statement and query timeouts: an index
        // build on a large table takes minutes, and an online migration must not be cut short
        const client = new Client({ connectionString: config.databaseUrl! });
        await client.connect();
        try {
          // one instance migrates at a time; the others wait, then find nothing to do
          await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
          try {
            await applyMigrations(
              { exec: async (text) => void (await client.query(text)), query: async (text, params) => (await client.query(text, params)).rows },
              migrationsFolder(),
              { concurrently: true },
            );
          } finally {
            await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
          }
        } finally {
          await client.end();
        }
      },
      null,
      queryErrors,
      pool,
      rootTransaction,
    );
  }

  /** Connections of the PostgreSQL pool: open, idle, and requests waiting for one (null on PGlite). */
  poolStats(): PoolStats | null {
    const pool = this.pool;
    return pool ? { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max } : null;
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

/**
 * What a query may take beyond the server's statement_timeout before the
 * client gives up on the connection (a frozen server never answers).
 */
export const QUERY_TIMEOUT_MARGIN_MS = 500;

type QueryArgs = [config: unknown, values?: unknown, callback?: unknown];

function deadlineError(what: string): Error {
  // ETIMEDOUT: translateDatabaseError answers 503 service_unavailable
  return Object.assign(new Error(`${what}: the request's database deadline has passed`), { code: 'ETIMEDOUT' });
}

/**
 * A node-postgres client that (1) bounds each query by the request's deadline
 * as well as the pool's query_timeout, and (2) closes its connection when a
 * query times out: the query is still running on it (or the server is
 * frozen), so anything sent next — the transaction's ROLLBACK — would wait
 * behind it, and the pool would hand the stuck connection to the next request.
 * Closed, the ROLLBACK fails at once and the pool discards the client.
 */
class BoundedClient extends Client {
  override query(...args: QueryArgs): never {
    const [config, values] = args;
    let callback = args[2];
    const isSubmittable = typeof (config as { submit?: unknown })?.submit === 'function';
    const remaining = remainingMs();
    if (isSubmittable || remaining === null) return this.watch(args);
    if (remaining === 0) {
      const error = deadlineError('query not sent');
      if (typeof values === 'function') callback = values;
      if (typeof callback === 'function') {
        process.nextTick(() => (callback as (e: Error) => void)(error));
        return undefined as never;
      }
      return Promise.reject(error) as never;
    }
    const base = (this as unknown as { connectionParameters: { query_timeout?: number } }).connectionParameters.query_timeout ?? Infinity;
    const text = typeof config === 'string' ? { text: config } : (config as object);
    return this.watch([{ ...text, query_timeout: Math.min(base, remaining) }, values, callback]);
  }

  private watch([config, values, callback]: QueryArgs): never {
    const abandonOnTimeout = (error: unknown) => {
      if (error instanceof Error && error.message === 'Query read timeout') void this.end().catch(() => undefined);
    };
    const query = super.query.bind(this) as (...a: unknown[]) => unknown;
    if (typeof values === 'function' || typeof callback === 'function') {
      const cb = (typeof values === 'function' ? values : callback) as (e: unknown, r: unknown) => void;
      const wrapped = (error: unknown, result: unknown) => {
        abandonOnTimeout(error);
        cb(error, result);
      };
      return (typeof values === 'function' ? query(config, wrapped) : query(config, values, wrapped)) as never;
    }
    const result = (values === undefined ? query(config) : query(config, values)) as Promise<unknown> | undefined;
    if (result && typeof (result as Promise<unknown>).then === 'function' && (config as { submit?: unknown })?.submit === undefined) {
      return (result as Promise<unknown>).catch((error: unknown) => {
        abandonOnTimeout(error);
        throw error;
      }) as never;
    }
    return result as never;
  }
}

/**
 * The pool drizzle's root database runs on. While a request transaction is
 * open, its queries — prepared statements built on the root db included —
 * run on that transaction's connection (on a pool connection they would not
 * see its uncommitted rows, and would not be part of it). Waiting for a
 * connection is bounded by the request's deadline.
 */
class RequestPool extends Pool {
  constructor(config: PoolConfig) {
    super(config);
    const poolQuery = this.query.bind(this) as (...a: unknown[]) => unknown;
    this.query = ((...args: unknown[]) => {
      const transaction = openRequestTransaction();
      if (transaction) return (transaction.client as PoolClient).query(...(args as [string]));
      // promise form only (drizzle's): a callback caller gets the pool's own behaviour
      if (remainingMs() === null || args.some((arg) => typeof arg === 'function')) return poolQuery(...args);
      return this.queryWithinDeadline(args);
    }) as Pool['query'];
  }

  private async queryWithinDeadline(args: unknown[]): Promise<unknown> {
    const client = await this.connect();
    try {
      return await client.query(...(args as [string]));
    } finally {
      client.release();
    }
  }

  override connect(): Promise<PoolClient>;
  override connect(callback: (err: Error | undefined, client: PoolClient | undefined, done: (release?: unknown) => void) => void): void;
  override connect(callback?: (err: Error | undefined, client: PoolClient | undefined, done: (release?: unknown) => void) => void): Promise<PoolClient> | void {
    if (callback) return super.connect(callback);
    const remaining = remainingMs();
    // an idle connection and no one waiting: the pool hands it over on the next tick, no wait to bound
    const immediate = this.idleCount > 0 && this.waitingCount === 0;
    const pending = super.connect();
    if (remaining === null || immediate) return pending;
    return new Promise<PoolClient>((resolve, reject) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        reject(deadlineError('no database connection'));
      }, remaining);
      pending.then(
        (client) => {
          clearTimeout(timer);
          if (late) client.release();
          else resolve(client);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error as Error);
        },
      );
    });
  }
}
