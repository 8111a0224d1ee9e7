import { sql } from 'drizzle-orm';
import { newId } from '../libs/ids/ids';
import { AnalyticsRepository, type AnalyticsDayRow, type AnalyticsTotalsRow } from '../src/analytics/analytics.repository';
import { ConversationsRepository, type NewConversationRow } from '../src/conversations/conversations.repository';
import type { Database } from '../src/database/database.types';
import { createOrg } from './support/factories';
import { insertAgent, insertConversation } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Agent analytics read whole days from rollups the database keeps with
 * triggers, and the partial days at a window's ends from the conversations.
 * Whatever wrote the conversations (row inserts, a set-based INSERT … SELECT,
 * the fixture loader's upserts, updates, deletes, a deleted organization), the
 * answers must equal a direct aggregate over the conversations table: the
 * query the service ran before the rollups, kept here as the reference.
 */

const DAY_MS = 86_400_000;
const D0 = Date.parse('2026-03-01T00:00:00Z');
const TICKETS = ['T1', 'T2', 'T3', 'T4', 'T5', 'T6', 'T7', 'T8'];
const SOURCES = ['dashboard', 'autonomous', 'embed', 'sub-agent'];

/** a deterministic PRNG (mulberry32), so that a failure replays */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Raw = Record<string, unknown>;
const rows = async (db: Database, query: ReturnType<typeof sql>): Promise<Raw[]> => ((await db.execute(query)) as unknown as { rows: Raw[] }).rows;

/** the totals as a direct aggregate over the window's conversations */
async function referenceTotals(db: Database, orgId: string, agentId: string, since: Date, until: Date): Promise<AnalyticsTotalsRow> {
  const [row] = await rows(db, sql`
    with windowed as (
      select source, autonomous, is_simulation, message_count, credits_used, ticket_ids from conversations
      where org_id = ${orgId} and agent_id = ${agentId} and created_at >= ${since} and created_at <= ${until}
    )
    select count(*)::int as conversations, coalesce(sum(message_count), 0)::float8 as messages, coalesce(sum(credits_used), 0)::float8 as credits_used,
      (count(*) filter (where autonomous))::int as autonomous, (count(*) filter (where is_simulation))::int as simulations,
      (count(*) filter (where source = 'dashboard'))::int as dashboard, (count(*) filter (where source = 'autonomous'))::int as autonomous_source,
      (count(*) filter (where source = 'embed'))::int as embed, (count(*) filter (where source = 'sub-agent'))::int as sub_agent,
      (select count(distinct ticket)::int from windowed, unnest(windowed.ticket_ids) as ticket) as distinct_tickets
    from windowed`);
  return {
    conversations: Number(row.conversations),
    messages: Number(row.messages),
    creditsUsed: Number(row.credits_used),
    autonomous: Number(row.autonomous),
    simulations: Number(row.simulations),
    dashboard: Number(row.dashboard),
    autonomousSource: Number(row.autonomous_source),
    embed: Number(row.embed),
    subAgent: Number(row.sub_agent),
    distinctTickets: Number(row.distinct_tickets),
  };
}

/** every day of the window, newest first, each a direct aggregate */
async function referenceDaily(db: Database, orgId: string, agentId: string, since: Date, until: Date): Promise<AnalyticsDayRow[]> {
  const found = await rows(db, sql`
    with days as (
      select d::date as day from generate_series((${until}::timestamptz at time zone 'UTC')::date::timestamp,
        (${since}::timestamptz at time zone 'UTC')::date::timestamp, interval '-1 day') as d
    )
    select to_char(days.day, 'YYYY-MM-DD') as day, count(c.id)::int as conversations, coalesce(sum(c.message_count), 0)::float8 as messages,
      coalesce(sum(c.credits_used), 0)::float8 as credits_used, (count(c.id) filter (where c.autonomous))::int as autonomous
    from days left join conversations c on c.org_id = ${orgId} and c.agent_id = ${agentId} and c.created_at >= ${since} and c.created_at <= ${until}
      and (c.created_at at time zone 'UTC')::date = days.day
    group by days.day order by days.day desc`);
  return found.map((row) => ({
    id: String(row.day),
    conversations: Number(row.conversations),
    messages: Number(row.messages),
    creditsUsed: Number(row.credits_used),
    autonomous: Number(row.autonomous),
  }));
}

/** the rollup tables of one organization, in a stable order */
async function rollupState(db: Database, orgId: string): Promise<Raw[][]> {
  return [
    await rows(db, sql`select agent_id, day::text, conversations, messages::text, credits_used::text, autonomous, simulations, dashboard, autonomous_source, embed, sub_agent
      from agent_daily_usage where org_id = ${orgId} order by agent_id, day`),
    await rows(db, sql`select agent_id, ticket, day::text, conversations from agent_ticket_days where org_id = ${orgId} order by agent_id, ticket, day`),
    await rows(db, sql`select agent_id, day::text, previous_day::text, tickets from agent_daily_tickets where org_id = ${orgId} order by agent_id, day, previous_day`),
  ];
}

describe('Agent analytics from the rollups', () => {
  let t: TestApp;
  let db: Database;
  let analytics: AnalyticsRepository;
  beforeAll(async () => {
    t = await createTestApp();
    db = t.connection.db;
    analytics = t.app.get(AnalyticsRepository);
  });
  afterAll(() => t.close());

  const random = prng(0x18a11);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  /** a moment in days [0, 20), now and then exactly at midnight or in the day's last microsecond */
  const moment = (): Date => {
    const day = Math.floor(random() * 20);
    const roll = random();
    if (roll < 0.1) return new Date(D0 + day * DAY_MS);
    if (roll < 0.15) return new Date(D0 + (day + 1) * DAY_MS - 1);
    return new Date(D0 + day * DAY_MS + Math.floor(random() * DAY_MS));
  };
  const tickets = (): string[] => {
    const roll = random();
    if (roll < 0.4) return [];
    if (roll < 0.8) return [pick(TICKETS)];
    return [...new Set([pick(TICKETS), pick(TICKETS)])];
  };
  const conversationRow = (orgId: string, agentIds: string[]): NewConversationRow => {
    const source = pick(SOURCES);
    return {
      id: newId('conversation'),
      orgId,
      title: 'A conversation',
      source,
      agentId: random() < 0.1 ? null : pick(agentIds),
      autonomous: source === 'autonomous',
      isSimulation: random() < 0.2,
      conversationNumber: source === 'sub-agent' ? null : 1,
      creditsUsed: Math.floor(random() * 50),
      ticketIds: tickets(),
      messageCount: Math.floor(random() * 12),
      createdAt: moment(),
    };
  };

  /** random windows whose edges fall inside days, on midnights, before and after the data, and empty ones */
  const windows = (): Array<[Date, Date]> => {
    const list: Array<[Date, Date]> = [
      [new Date(D0), new Date(D0 + 20 * DAY_MS)],
      [new Date(D0 + 3 * DAY_MS), new Date(D0 + 3 * DAY_MS)],
      [new Date(D0 + 3 * DAY_MS), new Date(D0 + 4 * DAY_MS)],
      [new Date(D0 + 3 * DAY_MS + 1), new Date(D0 + 4 * DAY_MS - 1)],
      [new Date(D0 - 40 * DAY_MS), new Date(D0 - 30 * DAY_MS)],
      [new Date(D0 + 30 * DAY_MS + 5), new Date(D0 + 45 * DAY_MS)],
      [new Date(D0 - 400 * DAY_MS), new Date(D0 + 400 * DAY_MS)],
    ];
    for (let i = 0; i < 30; i += 1) {
      const since = D0 + Math.floor((random() * 24 - 2) * DAY_MS);
      list.push([new Date(since), new Date(since + Math.floor(random() * random() * 16 * DAY_MS))]);
    }
    return list;
  };

  async function expectExact(orgId: string, agentIds: string[]): Promise<void> {
    for (const agentId of agentIds) {
      for (const [since, until] of windows()) {
        const window = `${agentId} ${since.toISOString()} .. ${until.toISOString()}`;
        const usage = await analytics.agentUsage(orgId, agentId, { since, until, trashWindowStart: new Date(0) }, { fromDay: until.toISOString().slice(0, 10), fetch: 1000 });
        expect({ window, usage }).toEqual({
          window,
          usage: { totals: await referenceTotals(db, orgId, agentId, since, until), days: await referenceDaily(db, orgId, agentId, since, until) },
        });
        // a page from the middle of the series
        const middle = new Date((since.getTime() + until.getTime()) / 2).toISOString().slice(0, 10);
        const page = await analytics.agentUsage(orgId, agentId, { since, until, trashWindowStart: new Date(0) }, { fromDay: middle, fetch: 3 });
        expect({ window, days: page?.days }).toEqual({ window, days: usage!.days.filter((day) => day.id <= middle).slice(0, 3) });
      }
    }
    // the triggers' running sums equal a count from scratch
    const kept = await rollupState(db, orgId);
    expect(kept[0].length).toBeGreaterThan(0);
    for (const agentId of agentIds) await db.execute(sql`select conversations_usage_recount(${orgId}, ${agentId})`);
    expect(await rollupState(db, orgId)).toEqual(kept);
  }

  it('answers like a direct aggregate after row inserts, a set-based insert, fixture upserts, updates and deletes', async () => {
    const org = await createOrg(t.app);
    const agentIds = [await insertAgent(db, org.orgId), await insertAgent(db, org.orgId), await insertAgent(db, org.orgId, { deletedAt: new Date() })];

    // one row per statement
    for (let i = 0; i < 40; i += 1) {
      const { id: _id, orgId: _org, ...row } = conversationRow(org.orgId, agentIds);
      await insertConversation(db, org.orgId, { ...row }, []);
      // insertConversation derives ticket ids from metadata: put the random ones back
      await db.execute(sql`update conversations set ticket_ids = array(select jsonb_array_elements_text(${JSON.stringify(row.ticketIds)}::jsonb)), message_count = ${row.messageCount} where org_id = ${org.orgId} and id = (
        select id from conversations where org_id = ${org.orgId} order by id desc limit 1)`);
    }
    // one set-based statement, a repeated ticket id in one array and a day's last microsecond among its rows
    await db.execute(sql`insert into conversations (id, org_id, title, source, agent_id, autonomous, is_simulation, credits_used, ticket_ids, message_count, created_at)
      select 'conv_' || lpad(to_hex(1700000000 + g), 8, '0') || lpad(to_hex(g), 16, '0'), ${org.orgId}, 'set-based', (array['dashboard','autonomous','embed','sub-agent'])[1 + g % 4],
        (array[${agentIds[0]}, ${agentIds[1]}, ${agentIds[2]}, null])[1 + g % 4], g % 4 = 1, g % 5 = 0, g % 17, case when g % 3 = 0 then array['T' || (g % 9), 'T' || (g % 9)]
        when g % 3 = 1 then array['T' || (g % 5)] else '{}' end, g % 7,
        ${new Date(D0).toISOString()}::timestamptz + interval '1 microsecond' * (g * 4321987654 % 1728000000000) - case when g % 11 = 0 then interval '1 microsecond' else interval '0' end
      from generate_series(1, 120) g`);
    // the fixture loader: INSERT … ON CONFLICT DO UPDATE, new rows and rewritten ones in one statement
    const conversations = t.app.get(ConversationsRepository);
    const existing = (await rows(db, sql`select id from conversations where org_id = ${org.orgId} order by id limit 30`)).map((row) => String(row.id));
    const upserts = [...existing.map((id) => ({ ...conversationRow(org.orgId, agentIds), id })), ...Array.from({ length: 30 }, () => conversationRow(org.orgId, agentIds))];
    await conversations.upsertMany(org.orgId, upserts, new Map());
    await expectExact(org.orgId, agentIds);

    // updates that move conversations between agents and days and change their tickets, then deletes
    await db.execute(sql`update conversations set agent_id = case when agent_id = ${agentIds[0]} then ${agentIds[1]} else agent_id end,
        created_at = created_at + interval '13 hours', ticket_ids = case when cardinality(ticket_ids) = 0 then array['T3'] else ticket_ids[2:] end,
        message_count = message_count + 1, credits_used = credits_used * 2
      where org_id = ${org.orgId} and id in (select id from conversations where org_id = ${org.orgId} order by id offset 10 limit 60)`);
    await db.execute(sql`update conversations set title = 'renamed' where org_id = ${org.orgId}`);
    await db.execute(sql`delete from conversations where org_id = ${org.orgId} and id in (select id from conversations where org_id = ${org.orgId} order by credits_used limit 50)`);
    await conversations.upsertMany(org.orgId, upserts.slice(20, 40), new Map());
    await expectExact(org.orgId, agentIds);
  });

  it('keeps the answer of an agent in the trash, and none once it is past the trash window', async () => {
    const org = await createOrg(t.app);
    const trashed = await insertAgent(db, org.orgId, { deletedAt: new Date(D0 + 10 * DAY_MS) });
    await insertConversation(db, org.orgId, { agentId: trashed, createdAt: new Date(D0 + 5 * DAY_MS + 7), metadata: { ticketId: 'T1' } });
    const since = new Date(D0 + 1);
    const until = new Date(D0 + 9 * DAY_MS - 1);
    const page = { fromDay: '2026-03-09', fetch: 30 };
    const kept = await analytics.agentUsage(org.orgId, trashed, { since, until, trashWindowStart: new Date(D0) }, page);
    expect(kept?.totals).toEqual(await referenceTotals(db, org.orgId, trashed, since, until));
    expect(kept?.totals.distinctTickets).toBe(1);
    expect(await analytics.agentUsage(org.orgId, trashed, { since, until, trashWindowStart: new Date(D0 + 11 * DAY_MS) }, page)).toBeNull();
  });

  it('drops an organization’s rollups with the organization', async () => {
    const org = await createOrg(t.app);
    const agentId = await insertAgent(db, org.orgId);
    await insertConversation(db, org.orgId, { agentId, createdAt: new Date(D0 + DAY_MS), metadata: { ticketId: 'T1' } });
    await insertConversation(db, org.orgId, { agentId, createdAt: new Date(D0 + 2 * DAY_MS), metadata: { ticketId: 'T1' } });
    expect((await rollupState(db, org.orgId)).map((table) => table.length)).toEqual([2, 2, 2]);
    await db.execute(sql`delete from orgs where id = ${org.orgId}`);
    expect((await rollupState(db, org.orgId)).map((table) => table.length)).toEqual([0, 0, 0]);
  });
});
