import { drizzle } from 'drizzle-orm/node-postgres';
import { DatabaseError, Pool, type PoolClient, type PoolConfig, type QueryConfig as PgQueryConfig, type QueryResult } from 'pg';
import { isLostConnection } from './database-errors';
import type { Database, Transaction } from './database.types';
import type { QueryErrorReporter } from './query-error-reporter';
import { UNNAMED_STATEMENT_NAME } from './prepared-statements';
import { databaseDeadline } from './request-scope';

/**
 * What a query may take beyond the server's statement_timeout before the
 * client gives up on the connection (a frozen server never answers).
 */
const QUERY_TIMEOUT_MARGIN_MS = 500;

/** Longest wait for a connection outside a request (jobs, the CLI); a request waits until its deadline at most. */
const MAX_CONNECT_WAIT_MS = 5_000;

/** 08006 connection_failure: translateDatabaseError answers 503 service_unavailable. */
function connectionLost(what: string, cause?: unknown): Error {
  return Object.assign(new Error(`${what}: the database connection was lost`, { cause }), { code: '08006' });
}

/** ETIMEDOUT: translateDatabaseError answers 503 service_unavailable. */
function deadlineError(what: string): Error {
  return Object.assign(new Error(`${what}: the database deadline has passed`), { code: 'ETIMEDOUT' });
}

/** What drizzle's driver hands `query`: node-postgres' documented query config (or plain text). */
type QueryConfig = string | PgQueryConfig;

/** The statement's name: `name` of node-postgres' documented query config (text and submittables have none). */
function statementName(config: QueryConfig): string | undefined {
  return typeof config === 'object' && 'name' in config ? config.name : undefined;
}

/** The statement's SQL text. */
function statementText(config: QueryConfig): string {
  return typeof config === 'string' ? config : config.text;
}

/**
 * Whether a statement whose connection was lost after it was sent cannot
 * have taken effect: a transaction's BEGIN, or a read (SELECT or WITH, with
 * no word that writes or has a side effect anywhere in it). Anything else —
 * an autocommit INSERT, UPDATE, increment — may have committed before the
 * connection died, so it is never sent again. Judged on the text that is
 * sent, so no caller has to remember the rule; a read that mentions one of
 * the words is merely not retried.
 */
function cannotHaveTakenEffect(config: QueryConfig): boolean {
  const text = statementText(config);
  if (/^\s*(begin|start\s+transaction)\b/i.test(text)) return true;
  return /^\s*(select|with)\b/i.test(text) && !/\b(insert|update|delete|merge|into|nextval|setval|set_config|pg_advisory_\w*|pg_notify|pg_terminate_backend|pg_cancel_backend|lo_\w+)\b/i.test(text);
}

/** The same statement without its name (node-postgres prepares a named statement once per connection). */
function unnamed(config: QueryConfig): QueryConfig {
  if (typeof config !== 'object' || !('name' in config) || !config.name) return config;
  return { ...config, name: undefined };
}

/** A statement prepared by `prepareUnnamed`: its SQL is kept, its plan is not. */
function plannedPerExecution(config: QueryConfig): boolean {
  return statementName(config) === UNNAMED_STATEMENT_NAME;
}

/**
 * The object drizzle's node-postgres driver is given as its client. The
 * driver runs each statement through `query(config, values)` — node-postgres'
 * documented call — and nothing else but `transaction`, which only the
 * per-connection databases below ever get (the root database's transactions
 * are `PostgresConnections.transaction`, never drizzle's own over a pool).
 */
interface StatementRunner {
  query(config: QueryConfig, values?: unknown[]): Promise<QueryResult>;
}

/** What is known of one pooled connection, from node-postgres' 'error' and 'end' events. */
interface ConnectionState {
  lost: boolean;
}

/**
 * One checkout of a pooled connection, bounded in time. Every statement ends
 * by the request's deadline (outside a request: the per-statement bound); one
 * that does not, or that failed without the server's answer, leaves the
 * connection suspect, and the release destroys it (node-postgres'
 * `release(err)`): the stuck statement may still run on it, and anything sent
 * next — the ROLLBACK — would wait behind it.
 */
class Lease {
  private statements = 0;
  private released = false;
  private broken: Error | null = null;
  /**
   * its first statement found the connection already gone, or was lost when
   * it cannot have taken effect (cannotHaveTakenEffect): nothing of the work
   * took effect on it
   */
  diedBeforeWork = false;
  /** statements that completed on the connection */
  private completed = 0;
  /** how many had completed when the connection was found gone (null: it was not) */
  private completedWhenLost: number | null = null;

  constructor(
    private readonly client: PoolClient,
    private readonly state: ConnectionState,
    /** the request's deadline; null: each statement gets `statementBoundMs` */
    private readonly deadline: number | null,
    private readonly statementBoundMs: number,
    private readonly queryErrors: QueryErrorReporter,
    /**
     * Send every statement unnamed: drizzle's prepared queries keep their SQL
     * built once, but the server parses each execution on whichever connection
     * runs it — a pooler in transaction mode moves statements between
     * connections, where a named statement is missing or already taken.
     */
    private readonly unnamedStatements: boolean,
  ) {}

  /**
   * drizzle's database on this checkout: its `transaction` runs BEGIN …
   * COMMIT here. Built without the schema (that costs ~0.4 ms; relational
   * queries are not used), and per checkout, so a statement never reaches a
   * connection after its checkout ended.
   */
  db(): Database {
    const runner: StatementRunner = { query: (config, values) => this.query(config, values) };
    return drizzle({ client: runner as unknown as PoolClient }) as unknown as Database;
  }

  query(config: QueryConfig, values?: unknown[]): Promise<QueryResult> {
    const first = this.statements === 0;
    if (this.released) return this.refuse(this.broken ?? connectionLost('statement not sent'));
    if (this.state.lost) {
      // the connection's 'error' event came before the statement was sent: nothing of it ran
      this.diedBeforeWork ||= first;
      this.completedWhenLost ??= this.completed;
      this.broken = connectionLost('statement not sent');
      return this.refuse(this.broken);
    }
    const remaining = this.deadline === null ? this.statementBoundMs : this.deadline - Date.now();
    if (remaining <= 0) {
      const error = deadlineError('statement not sent');
      // a transaction cut here is still open on the connection: not to be reused
      if (!first) this.broken = error;
      return this.refuse(error);
    }
    this.statements++;
    return new Promise<QueryResult>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        this.broken = deadlineError('statement');
        this.release();
        this.queryErrors.report(this.broken);
        reject(this.broken);
      }, remaining);
      this.client.query(this.unnamedStatements || plannedPerExecution(config) ? unnamed(config) : config, values).then(
        (result) => {
          clearTimeout(timer);
          if (settled) return;
          this.completed++;
          resolve(result);
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (settled) return;
          const failure = this.failed(error, first && cannotHaveTakenEffect(config));
          this.queryErrors.report(failure);
          reject(failure);
        },
      );
    });
  }

  private refuse(error: Error): Promise<never> {
    this.queryErrors.report(error);
    return Promise.reject(error);
  }

  /** `harmless`: the first statement, and one that cannot have taken effect (a read, BEGIN) */
  private failed(error: unknown, harmless: boolean): unknown {
    // node-postgres emits the connection's 'error' before the statement's rejection is handled
    const lost = this.state.lost || isLostConnection(error);
    if (lost || !(error instanceof DatabaseError)) this.broken = error instanceof Error ? error : new Error(String(error));
    if (!lost) return error;
    this.diedBeforeWork ||= harmless;
    this.completedWhenLost ??= this.completed;
    return connectionLost('statement failed', error);
  }

  /**
   * The connection was found gone when BEGIN was all that had completed on
   * it: the transaction's work, uncommitted, is gone with it.
   */
  lostAfterBeginOnly(): boolean {
    return this.completedWhenLost === 1;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.client.release(this.broken ?? undefined);
  }
}

interface ConnectionEvents {
  /** a checked-out or idle connection failed (node-postgres' client 'error' event) */
  connectionError(error: Error): void;
  /** the pool's 'error' event: an idle connection failed */
  idleError(error: Error): void;
}

/**
 * The PostgreSQL pool and the one way every statement reaches it. `acquire`
 * is the only checkout, bounded by the request's deadline. A statement on the
 * root database runs on a connection of its own, a transaction's on the
 * transaction's. A statement (or a transaction's BEGIN) that finds
 * its connection already dead, before anything else ran on it, runs again on
 * a live one (`retryAfter`) — once sent, only when it cannot have taken
 * effect (`cannotHaveTakenEffect`): an autocommit write whose connection died
 * after sending may have committed, and is never run twice.
 */
export class PostgresConnections {
  readonly pool: Pool;
  /** drizzle's root database: every statement goes through `run` */
  readonly db: Database;
  private readonly states = new WeakMap<object, ConnectionState>();
  private readonly statementBoundMs: number;
  private readonly maxRetries: number;
  private readonly unnamedStatements: boolean;

  constructor(
    /** poolerSafe: nothing kept on a connection between transactions (a pooler in transaction mode) */
    config: PoolConfig & { statementTimeoutMs: number; poolerSafe?: boolean },
    private readonly queryErrors: QueryErrorReporter,
    events: ConnectionEvents,
  ) {
    const { statementTimeoutMs, poolerSafe = false, ...poolConfig } = config;
    this.statementBoundMs = statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS;
    this.maxRetries = (poolConfig.max ?? 10) + 1;
    this.unnamedStatements = poolerSafe;
    // a pooler without protocol-level prepared statements (PgBouncer before 1.21) refuses the
    // startup parameter: there the server-side timeout is the role's or database's setting, and
    // our own per-statement bound holds either way
    this.pool = new Pool(poolerSafe ? poolConfig : { ...poolConfig, statement_timeout: statementTimeoutMs });
    // node-postgres emits 'error' on a client whose connection drops (server stopped, backend
    // terminated), and the pool listens only while it is idle: a client checked out between two
    // statements had no listener, and the process died. Every client gets one for its whole life.
    this.pool.on('connect', (client) => {
      const state: ConnectionState = { lost: false };
      this.states.set(client, state);
      client.on('error', (error) => {
        state.lost = true;
        events.connectionError(error);
      });
      client.on('end', () => (state.lost = true));
    });
    this.pool.on('error', (error) => events.idleError(error));
    const root: StatementRunner = { query: (config, values) => this.run(config, values) };
    this.db = drizzle({ client: root as unknown as Pool }) as unknown as Database;
  }

  /**
   * The only checkout of a connection: waits until the request's deadline at
   * most (outside a request, a few seconds); a connection handed over late
   * goes back to the pool. A bound on the connections one piece of work may
   * hold belongs here.
   */
  async acquire(): Promise<Lease> {
    const deadline = databaseDeadline();
    const remaining = deadline === null ? Math.min(this.statementBoundMs, MAX_CONNECT_WAIT_MS) : deadline - Date.now();
    if (remaining <= 0) throw deadlineError('no database connection');
    const pending = this.pool.connect().catch((error: unknown) => {
      // a refused or reset socket keeps its code; anything else (the pool closed) is a lost connection
      throw typeof (error as { code?: unknown } | null)?.code === 'string' ? error : connectionLost('no database connection', error);
    });
    // an idle connection and no one waiting: the pool hands it over on the next tick, no wait to bound
    const client = this.pool.idleCount > 0 && this.pool.waitingCount === 0 ? await pending : await withinDeadline(pending, remaining);
    return new Lease(client, this.states.get(client)!, deadline, this.statementBoundMs, this.queryErrors, this.unnamedStatements);
  }

  /** Runs `fn` in a transaction on one connection, handed to it as `tx`; statements on the root database run outside it. */
  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const lease = await this.acquire();
      let begun = false;
      try {
        return await lease.db().transaction(async (tx) => {
          begun = true;
          return fn(tx);
        });
      } catch (error) {
        // BEGIN found the connection dead, or the first statement after it did (an idle connection
        // can die between the two): nothing was committed, take another and run the work again
        const nothingCommitted = begun ? lease.lostAfterBeginOnly() : lease.diedBeforeWork;
        if (await this.retryAfter(lease, attempt, nothingCommitted)) continue;
        throw error;
      } finally {
        lease.release();
      }
    }
  }

  /**
   * Whether to run the work again after `lease` failed. Only when nothing of
   * it ran there (its first statement found the connection dead) or nothing
   * of it was committed and nothing but BEGIN had completed (the code of the
   * transaction's work before its first statement then runs again: it is
   * validation and building, never a side effect outside the database). The backends
   * of idle connections are often lost together (a failover, a balancer's
   * idle cut, an administrator terminating them), so the next idle connection
   * may be dead too: the death notices already received are handled first
   * (the pool drops those connections), and the work is tried again while each
   * try finds its connection dead before anything ran — each such connection
   * is destroyed, so after at most the pool's size of them the try runs on a
   * newly opened one. The request's deadline bounds it all.
   */
  private async retryAfter(lease: Lease, attempt: number, nothingRan = lease.diedBeforeWork): Promise<boolean> {
    if (!nothingRan || attempt >= this.maxRetries) return false;
    lease.release();
    await new Promise((resolve) => setImmediate(resolve));
    return true;
  }

  private async run(config: QueryConfig, values?: unknown[]): Promise<QueryResult> {
    for (let attempt = 0; ; attempt++) {
      const lease = await this.acquire();
      try {
        return await lease.query(config, values);
      } catch (error) {
        // the connection was dead before the statement reached it: nothing ran, run it on another
        if (await this.retryAfter(lease, attempt)) continue;
        throw error;
      } finally {
        lease.release();
      }
    }
  }
}

function withinDeadline(pending: Promise<PoolClient>, remaining: number): Promise<PoolClient> {
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
        if (!late) reject(error as Error);
      },
    );
  });
}
