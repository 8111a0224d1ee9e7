import { Client } from 'pg';
import { createOrg, type TestOrg } from '../support/factories';
import { startPgBouncer, type TestPgBouncer } from '../support/pgbouncer';
import { createTestApp, type TestApp } from '../support/test-app';

/**
 * Behind a pooler in transaction mode (PgBouncer, pool_mode = transaction,
 * with no protocol-level prepared statements), each transaction may run on
 * another server connection. With DATABASE_POOLER=transaction the service
 * keeps nothing on a connection: concurrent reads on every prepared hot path
 * and keyed writes all succeed through a pooler of a few server connections,
 * which the clients outnumber. This file starts its own PgBouncer in front of
 * the suite's server: without pgbouncer installed it fails.
 */
const SERVER_CONNECTIONS = 4;

describe('behind PgBouncer in transaction mode (DATABASE_POOLER=transaction)', () => {
  let bouncer: TestPgBouncer;
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    bouncer = startPgBouncer(process.env.DATABASE_URL!, SERVER_CONNECTIONS);
    // more connections in the service's pool than the pooler has server connections
    t = await createTestApp({ databaseUrl: bouncer.url, databasePooler: 'transaction', dbPoolMax: 12 });
    org = await createOrg(t.app);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    bouncer?.stop();
  });

  it('answers concurrent reads of every prepared path and keyed writes without an error', async () => {
    const created = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'pooled', name: 'Pooled', instructions: 'Be brief.' }).expect(201);
    const agentId = created.body.data.id as string;
    const paths = ['/api/v1/org', '/api/v1/agents', `/api/v1/agents/${agentId}`, '/api/v1/conversations', '/api/v1/team'];
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 12 }, async (_, client) => {
        for (let i = 0; i < 10; i++) {
          const path = paths[(client + i) % paths.length];
          statuses.push((await t.http.get(path).set('Authorization', org.auth)).status);
        }
        const patched = await t.http
          .patch(`/api/v1/agents/${agentId}`)
          .set('Authorization', org.auth)
          .set('Idempotency-Key', `pooled-${client}`)
          .send({ description: `client ${client}` });
        statuses.push(patched.status);
      }),
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(t.logs.filter((line) => /unhandled error|database error|database unavailable/.test(line))).toEqual([]);
  });

  it('keeps no named prepared statement on any server connection', async () => {
    // read on the server itself, not through the pooler: every backend of the suite's database
    const direct = new Client({ connectionString: process.env.DATABASE_URL });
    await direct.connect();
    try {
      const servers = await direct.query<{ count: number }>(`select count(*)::int as count from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`);
      // the pooler keeps its server connections open: there are some to look at
      expect(servers.rows[0].count).toBeGreaterThan(0);
    } finally {
      await direct.end();
    }
    // pg_prepared_statements is per connection: ask through the pooler on each of its server connections at once
    const clients = await Promise.all(
      Array.from({ length: SERVER_CONNECTIONS }, async () => {
        const client = new Client({ connectionString: bouncer.url });
        await client.connect();
        return client;
      }),
    );
    try {
      const counts = await Promise.all(
        clients.map(async (client) => {
          // inside a transaction each client holds its own server connection until the commit
          await client.query('begin');
          const result = await client.query<{ count: number; pid: number }>('select count(*)::int as count, pg_backend_pid() as pid from pg_prepared_statements');
          return result.rows[0];
        }),
      );
      await Promise.all(clients.map((client) => client.query('commit')));
      expect(new Set(counts.map((row) => row.pid)).size).toBe(SERVER_CONNECTIONS);
      expect(counts.map((row) => row.count)).toEqual(counts.map(() => 0));
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });
});
