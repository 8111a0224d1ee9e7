import { Client } from 'pg';
import { newId } from '../../libs/ids/ids';
import { createOrg } from '../support/factories';
import { insertAgent } from '../support/readside-rows';
import { createTestApp, type TestApp } from '../support/test-app';
import { backendPid, waitsOnLock } from '../support/pg-activity';
import { until } from '../support/until';

/**
 * The rollup backfill on a live table: a recount of one agent replaces its
 * rollup rows with a count of its conversations, so it must neither miss a
 * write in flight nor count one twice. Writers hold a shared lock per agent
 * they changed until they commit (agents share 1,024 such locks), the
 * recount takes it exclusively: it waits
 * for an open writer of its agent (never for another agent's), and a writer
 * that comes while it runs waits for it.
 */
describe('agent usage rollups: recount beside concurrent writers', () => {
  let t: TestApp;
  const clients: Client[] = [];
  const connect = async () => {
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    clients.push(client);
    return client;
  };
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    for (const client of clients) await client.end();
    await t.close();
  });

  // a writer on a day and a ticket the rollups do not hold yet touches no existing rollup row, so only the agent's lock orders it against a recount
  const insert = (client: Client, orgId: string, agentId: string, day = '2026-03-02', ticket = 'T1') =>
    client.query(
      `insert into conversations (id, org_id, title, source, agent_id, ticket_ids, message_count, created_at) values ($1, $2, 'c', 'dashboard', $3, array[$4], 2, $5::date + interval '10 hours')`,
      [newId('conversation'), orgId, agentId, ticket, day],
    );
  const settled = <T>(promise: Promise<T>) => {
    const state = { done: false };
    void promise.then(
      () => (state.done = true),
      () => (state.done = true),
    );
    return state;
  };
  /**
   * Until the statement of backend `pid` waits on a lock (or has finished, which the test's next line refuses): the
   * order under test is set, at whatever time a loaded machine gets there.
   */
  const lockedOrDone = (observer: Client, pid: number, state: { done: boolean }) => until(async () => state.done || (await waitsOnLock(observer, pid)));
  const usage = async (client: Client, orgId: string, agentId: string) =>
    (await client.query(`select day::text, conversations, messages::int from agent_daily_usage where org_id = $1 and agent_id = $2 order by day`, [orgId, agentId])).rows;
  const ticketState = async (client: Client, orgId: string, agentId: string) => [
    (await client.query(`select ticket, day::text, conversations from agent_ticket_days where org_id = $1 and agent_id = $2 order by ticket, day`, [orgId, agentId])).rows,
    (await client.query(`select day::text, previous_day::text, tickets from agent_daily_tickets where org_id = $1 and agent_id = $2 order by day, previous_day`, [orgId, agentId])).rows,
  ];

  it('a recount waits for an open writer of its agent, not of another agent, and counts its row once', async () => {
    const org = await createOrg(t.app);
    const agentId = await insertAgent(t.connection.db, org.orgId);
    const [writer, recounter, reader] = [await connect(), await connect(), await connect()];
    // agents share 1,024 locks: another agent whose lock is not this one's
    const bucket = async (id: string) => (await reader.query(`select hashtext($1 || '/' || $2) & 1023 as b`, [org.orgId, id])).rows[0].b as number;
    let otherId = newId('agent');
    while ((await bucket(otherId)) === (await bucket(agentId))) otherId = newId('agent');
    const otherAgent = await insertAgent(t.connection.db, org.orgId, { id: otherId });
    await insert(reader, org.orgId, agentId);

    await writer.query('begin');
    await insert(writer, org.orgId, agentId, '2026-03-05', 'T2');
    await insert(writer, org.orgId, agentId, '2026-03-05', 'T2');

    // another agent's recount goes through while the writer is open
    await recounter.query(`select conversations_usage_recount($1, $2)`, [org.orgId, otherAgent]);
    const recounterPid = await backendPid(recounter);
    const recount = recounter.query(`select conversations_usage_recount($1, $2)`, [org.orgId, agentId]);
    const state = settled(recount);
    await lockedOrDone(reader, recounterPid, state);
    expect(state.done).toBe(false);
    await writer.query('commit');
    await recount;
    expect(await usage(reader, org.orgId, agentId)).toEqual([
      { day: '2026-03-02', conversations: 1, messages: 2 },
      { day: '2026-03-05', conversations: 2, messages: 4 },
    ]);
    expect(await ticketState(reader, org.orgId, agentId)).toEqual([
      [{ ticket: 'T1', day: '2026-03-02', conversations: 1 }, { ticket: 'T2', day: '2026-03-05', conversations: 2 }],
      [{ day: '2026-03-02', previous_day: '-infinity', tickets: 1 }, { day: '2026-03-05', previous_day: '-infinity', tickets: 1 }],
    ]);
  });

  it('a writer of the agent being recounted waits for the recount, then adds to it', async () => {
    const org = await createOrg(t.app);
    const agentId = await insertAgent(t.connection.db, org.orgId);
    const [writer, recounter, reader] = [await connect(), await connect(), await connect()];
    await insert(reader, org.orgId, agentId);

    await recounter.query('begin');
    await recounter.query(`select conversations_usage_recount($1, $2)`, [org.orgId, agentId]);
    const writerPid = await backendPid(writer);
    const write = insert(writer, org.orgId, agentId, '2026-03-05', 'T2');
    const state = settled(write);
    await lockedOrDone(reader, writerPid, state);
    expect(state.done).toBe(false);
    await recounter.query('commit');
    await write;
    expect(await usage(reader, org.orgId, agentId)).toEqual([
      { day: '2026-03-02', conversations: 1, messages: 2 },
      { day: '2026-03-05', conversations: 1, messages: 2 },
    ]);
    expect(await ticketState(reader, org.orgId, agentId)).toEqual([
      [{ ticket: 'T1', day: '2026-03-02', conversations: 1 }, { ticket: 'T2', day: '2026-03-05', conversations: 1 }],
      [{ day: '2026-03-02', previous_day: '-infinity', tickets: 1 }, { day: '2026-03-05', previous_day: '-infinity', tickets: 1 }],
    ]);
  });
});
