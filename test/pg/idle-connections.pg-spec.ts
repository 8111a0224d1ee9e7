import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { TransactionHost } from '@nestjs-cls/transactional';
import { sql } from 'drizzle-orm';
import { Client } from 'pg';
import type { DatabaseTransactions } from '../../src/database/transactions';
import { createOrg, type TestOrg } from '../support/factories';
import { startTestCluster, type TestCluster } from '../support/pg-cluster';
import { createTestApp, type TestApp } from '../support/test-app';
import { linesWithQueryText } from '../support/log-lines';

/**
 * A pooled connection whose backend died while it sat idle (terminated by an
 * administrator, a failover, a balancer's idle cut) costs no request: the
 * statement that finds it dead, before anything else ran on it, runs again on
 * another connection; so does a transaction whose connection dies right after
 * its BEGIN (nothing of the work ran, nothing was committed). A connection
 * that dies in the middle of a transaction is not retried: part of the work
 * ran on it, and running it again could apply a write twice. Nor is an
 * autocommit write whose connection died after it was sent: it may have
 * committed; a read is sent again.
 */
const POOL_MAX = 4;

interface Sample {
  status: number;
  code?: string;
}

describe('connections that die while idle (server engine)', () => {
  let cluster: TestCluster;
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  let admin: Client;

  beforeAll(async () => {
    cluster = startTestCluster();
    t = await createTestApp({ databaseUrl: cluster.url, dbStatementTimeoutMs: 2_000, dbPoolMax: POOL_MAX });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/api/v1`;
    org = await createOrg(t.app, { limits: { agents: null } });
    admin = new Client({ connectionString: cluster.url });
    await admin.connect();
  }, 60_000);

  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    await t?.close().catch(() => undefined);
    cluster?.destroy();
  });

  /**
   * Terminates the backends that have sat idle for 20 ms: the pool's idle
   * connections. One statement, so a backend is signalled the instant it is
   * seen idle (one the pool hands over meanwhile would die in mid-work, which
   * the next test covers).
   */
  async function terminateIdle(): Promise<number> {
    const { rows } = await admin.query<{ ok: boolean }>(
      `select pg_terminate_backend(pid) as ok from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'
          and state = 'idle' and state_change < clock_timestamp() - interval '20 milliseconds'`,
    );
    return rows.filter((row) => row.ok).length;
  }

  async function send(keyed: boolean, i: number): Promise<Sample> {
    const res = keyed
      ? await fetch(`${base}/agents`, {
          method: 'POST',
          headers: { authorization: org.auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
          body: JSON.stringify({ handle: `idle${i}${randomUUID().slice(0, 6)}`, name: 'Idle', instructions: 'Help.' }),
          signal: AbortSignal.timeout(20_000),
        })
      : await fetch(`${base}/org`, { headers: { authorization: org.auth }, signal: AbortSignal.timeout(20_000) });
    const body = (await res.json()) as { error?: { code?: string } };
    return { status: res.status, code: body.error?.code };
  }

  it('terminating idle backends under load answers no request with 503: the statement runs again on another connection', async () => {
    const lost: unknown[] = [];
    const unsubscribe = t.connection.queryErrors.subscribe((error) => {
      if ((error as { code?: string }).code === '08006') lost.push(error);
    });
    const samples: Sample[] = [];
    let running = true;
    let sent = 0;
    // fewer clients than connections, with pauses: connections sit idle in the pool between requests
    const workers = Array.from({ length: 3 }, async () => {
      while (running) {
        const i = sent++;
        samples.push(await send(i % 3 === 0, i));
        await new Promise((resolve) => setTimeout(resolve, i % 4));
      }
    });
    let terminated = 0;
    try {
      // for 8 s, and on until the terminations and the traffic were enough to matter however slow a
      // loaded machine makes each request (at most 60 s: the assertions below say what was missing)
      const until = Date.now() + 8_000;
      const enough = () => terminated > 20 && lost.length > 0 && samples.length > 50;
      const cap = Date.now() + 60_000;
      while (Date.now() < until || (!enough() && Date.now() < cap)) {
        terminated += await terminateIdle();
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } finally {
      running = false;
      await Promise.all(workers);
      unsubscribe();
    }
    // the terminations hit connections the pool then handed to requests: the retry was needed
    expect(terminated).toBeGreaterThan(20);
    expect(lost.length).toBeGreaterThan(0);
    expect(samples.length).toBeGreaterThan(50);
    const failed = samples.filter((s) => s.status !== 200 && s.status !== 201);
    expect(failed).toEqual([]);
  });

  /** Terminates the one backend idle in a transaction (the test's own, right after its BEGIN), and lets the client see it. */
  async function killTheTransactionsBackend(): Promise<void> {
    const { rows } = await admin.query<{ ok: boolean }>(
      `select pg_terminate_backend(pid) as ok from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and state = 'idle in transaction'`,
    );
    expect(rows.filter((row) => row.ok)).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  it('a connection that dies right after BEGIN is retried: only BEGIN had run on it, the work runs again on another connection', async () => {
    const marker = `begin${randomUUID().slice(0, 8)}`;
    let runs = 0;
    await t.connection.transaction(async (tx) => {
      runs++;
      // BEGIN has completed on the transaction's connection: its backend dies before the work's first statement
      if (runs === 1) await killTheTransactionsBackend();
      await tx.execute(sql`update orgs set name = ${marker} where id = ${org.orgId}`);
    });
    expect(runs).toBe(2);
    const { rows } = await admin.query<{ name: string }>('select name from orgs where id = $1', [org.orgId]);
    expect(rows[0].name).toBe(marker);
  });

  it('through TransactionHost, as services open them: the work run again after a connection lost after BEGIN runs on the new attempt\'s tx', async () => {
    const txHost: TransactionHost<DatabaseTransactions> = t.app.get(TransactionHost);
    const marker = `host${randomUUID().slice(0, 8)}`;
    let runs = 0;
    await txHost.withTransaction(async () => {
      runs++;
      if (runs === 1) await killTheTransactionsBackend();
      await txHost.tx.execute(sql`update orgs set name = ${marker} where id = ${org.orgId}`);
    });
    expect(runs).toBe(2);
    const { rows } = await admin.query<{ name: string }>('select name from orgs where id = $1', [org.orgId]);
    expect(rows[0].name).toBe(marker);
  });

  it('a connection that dies in the middle of a transaction is not retried: the work ran once and rolled back', async () => {
    const marker = `mid${randomUUID().slice(0, 8)}`;
    let runs = 0;
    const attempt = t.connection.transaction(async (tx) => {
      runs++;
      await tx.execute(sql`update orgs set name = ${marker} where id = ${org.orgId}`);
      const { rows } = (await tx.execute(sql`select pg_backend_pid() as pid`)) as unknown as { rows: Array<{ pid: number }> };
      await admin.query('select pg_terminate_backend($1)', [rows[0].pid]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await tx.execute(sql`select 1`);
    });
    await expect(attempt).rejects.toMatchObject({ cause: { code: '08006' } });
    expect(runs).toBe(1);
    const { rows } = await admin.query<{ name: string }>('select name from orgs where id = $1', [org.orgId]);
    expect(rows[0].name).not.toBe(marker);
    // and the pool serves on
    expect((await send(false, 0)).status).toBe(200);
  });

  /** Terminates the backend running the statement whose text contains `marker` (a comment), once it is seen running; returns its pid. */
  async function terminateRunning(marker: string): Promise<number> {
    for (;;) {
      const { rows } = await admin.query<{ pid: number }>(
        `select pid from pg_stat_activity where state = 'active' and pid <> pg_backend_pid() and query like '%' || $1 || '%' and query not like '%pg_stat_activity%'`,
        [marker],
      );
      if (rows.length > 0) {
        await admin.query('select pg_terminate_backend($1)', [rows[0].pid]);
        return rows[0].pid;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('an autocommit write whose connection dies after it was sent is not sent again: it may have committed', async () => {
    const marker = `sent${randomUUID().slice(0, 8)}`;
    const { rows: before } = await admin.query<{ name: string }>('select name from orgs where id = $1', [org.orgId]);
    // the statement sleeps on the server; its backend is terminated meanwhile (it rolls back, but the
    // service cannot know whether a write it had sent committed before the connection died)
    const write = t.connection.db.execute(
      sql`update orgs set name = ${marker} where id = ${org.orgId} and (select true from pg_sleep(1)) /* ${sql.raw(marker)} */`,
    );
    const outcome = write.then(
      () => 'answered',
      (error: { code?: string; cause?: { code?: string } }) => error.code ?? error.cause?.code ?? 'failed',
    );
    await terminateRunning(marker);
    expect(await outcome).toBe('08006');
    // sent once: a second execution would have committed the name
    const { rows } = await admin.query<{ name: string }>('select name from orgs where id = $1', [org.orgId]);
    expect(rows[0].name).toBe(before[0].name);
  });

  it('a read whose connection dies after it was sent runs again on another connection', async () => {
    const marker = `read${randomUUID().slice(0, 8)}`;
    // drizzle sends a statement when it is awaited: started here, so that it runs while the test watches
    const read = Promise.resolve(t.connection.db.execute(sql`select ${marker}::text as marker, pg_backend_pid() as pid from pg_sleep(1) /* ${sql.raw(marker)} */`));
    const killed = await terminateRunning(marker);
    const { rows } = (await read) as unknown as { rows: Array<{ marker: string; pid: number }> };
    expect(rows[0].marker).toBe(marker);
    expect(rows[0].pid).not.toBe(killed);
  });

  it('no log line the faults produced carries a query\'s text or parameters', () => {
    expect(t.logs.length).toBeGreaterThan(0);
    expect(linesWithQueryText(t.logs)).toEqual([]);
  });
});
