import { Client } from 'pg';
import { createOrg } from '../support/factories';
import { createTestApp, type TestApp } from '../support/test-app';

/**
 * The planner's statistics the list queries rely on, on PostgreSQL (the
 * embedded engine's tests never ANALYZE at this size).
 */
describe('conversations: the statistics the planner reads', () => {
  let t: TestApp;
  let client: Client;
  beforeAll(async () => {
    t = await createTestApp();
    // a connection of its own: the app's pool has the request statement timeout
    client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await t.close();
  });

  /** The planner's row estimate for one agent's conversations. */
  const estimate = async (agentId: string): Promise<number> => {
    const res = await client.query(`explain (format json) select 1 from conversations where agent_id = ${client.escapeLiteral(agentId)}`);
    return (res.rows[0]['QUERY PLAN'] as Array<{ Plan: { 'Plan Rows': number } }>)[0].Plan['Plan Rows'];
  };

  it('estimates each of 200 busy agents at its own count beside 2,000 quiet ones (migration 0017: a list of the 300 most common agents)', async () => {
    const org = await createOrg(t.app);
    const busy = 200;
    const busyRows = 150;
    const quiet = 2_000;
    const quietRows = 3;
    const agent = (kind: string, a: number) => `agent_${kind}${org.orgId.slice(-10)}${a.toString(16).padStart(8, '0')}`;
    try {
      await client.query(
        `insert into conversations (id, org_id, source, agent_id, created_at, updated_at)
          select 'conv_' || lpad(to_hex(1700000000 + i), 8, '0') || md5($1 || i)::varchar(16), $1, 'dashboard',
            case when i < $2::int * $3::int then $4 || lpad(to_hex(i % $2::int), 8, '0') else $5 || lpad(to_hex(i % $6::int), 8, '0') end,
            to_timestamp(1700000000 + i), to_timestamp(1700000000 + i)
          from generate_series(0, $2::int * $3::int + $6::int * $7::int - 1) i`,
        [org.orgId, busy, busyRows, agent('b', 0).slice(0, -8), agent('q', 0).slice(0, -8), quiet, quietRows],
      );
      await client.query('analyze conversations');
      // at the default target (100) half the busy agents would be left out of the list and estimated at the average
      // of the agents left out, 10 rows: the planner then walks such an agent's rows where it has 15 times more
      const estimates = await Promise.all(Array.from({ length: busy }, (_, a) => estimate(agent('b', a))));
      expect(Math.min(...estimates)).toBeGreaterThanOrEqual(busyRows / 2);
      expect(Math.max(...estimates)).toBeLessThanOrEqual(busyRows * 2);
    } finally {
      // the table is shared with the other suites of the run, whose term shares come from its statistics
      await client.query('delete from conversations where org_id = $1', [org.orgId]);
      await client.query('analyze conversations');
    }
  });
});
