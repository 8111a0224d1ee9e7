/**
 * The busiest agent's analytics on a seeded scale database, alone (the full
 * `npm run bench:scale` takes long at 10 M):
 *
 *   DATABASE_URL=postgres://… npm run bench:scale:analytics
 *
 * Migrates (and prints how long that took: a migration that builds a rollup
 * backfills it), starts the service on the database `npm run bench:scale`
 * seeded, and prints p50/p99 through HTTP for the default window, one year
 * back, two years back, windows of several lengths whose edges cut days, and
 * the second page of the year's daily series; then compares each of those
 * windows' totals with a direct aggregate over the conversations. DB_STATEMENT_TIMEOUT_MS raised lets a slow case
 * finish instead of answering 503.
 */
import 'reflect-metadata';
import { Client } from 'pg';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { BIG_ORG, bigAgentId } from './scale-seed';
import { openScaleDatabase, percentile, startScaleApp, timeFirstRequests } from './scale';
import { loadAverage } from './support';

const FIRST = 5;
const SAMPLES = Math.max(20, Number(process.env.BENCH_SCALE_SAMPLES ?? 25));

async function main(): Promise<void> {
  if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL must name a PostgreSQL server seeded by `npm run bench:scale`');
  console.log(`analytics at scale, load average ${loadAverage()}`);
  const { config, logger, connection } = await openScaleDatabase();
  const { app, base } = await startScaleApp(config, logger, connection);
  const token = (await app.get(ApiKeysService).create({ orgId: BIG_ORG, label: 'scale analytics bench', scopes: ['analytics:read', 'org:read'] })).token;
  const get = async (path: string) => {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { data?: { totals?: unknown }; meta?: { next_cursor?: string | null } };
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return body;
  };

  const busiest = bigAgentId(0);
  const day = 86_400_000;
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const year = `/analytics/agents/${busiest}?since=${iso(now - 365 * day)}&limit=100`;
  await timeFirstRequests(get);
  // the second page's cursor comes from the year's own runs (asked for before them, it warmed that case)
  let page2 = '';
  const cases: Array<[string, string | (() => string)]> = [
    ['default window (30 days)', `/analytics/agents/${busiest}`],
    ['one year back', year],
    ['one year back, page 2', () => `${year}&cursor=${encodeURIComponent(page2)}`],
    ['two years back', `/analytics/agents/${busiest}?since=${iso(now - 730 * day)}&limit=100`],
    ['edges inside days (400 days, 13:07 to 09:41)', `/analytics/agents/${busiest}?since=${iso(now - 400 * day - 3 * 3_600_000)}&until=${iso(now - 5 * day + 1_234_567)}`],
    // windows of other lengths whose edges cut days: two years, a month, across one midnight, inside one day
    ['edges inside days (729 days)', `/analytics/agents/${busiest}?since=${iso(now - 729 * day - 7_777_777)}&until=${iso(now - 2 * day + 4_321_000)}&limit=100`],
    ['edges inside days (31 days)', `/analytics/agents/${busiest}?since=${iso(now - 200 * day + 5_555_555)}&until=${iso(now - 169 * day - 3_333_333)}`],
    ['edges inside days (20 hours across midnight)', `/analytics/agents/${busiest}?since=${iso(now - 300 * day - 10 * 3_600_000)}&until=${iso(now - 300 * day + 10 * 3_600_000)}`],
    ['edges inside one day (3 hours)', `/analytics/agents/${busiest}?since=${iso(now - 100 * day)}&until=${iso(now - 100 * day + 3 * 3_600_000)}`],
  ];
  const edged = cases.filter((c): c is [string, string] => c[0].startsWith('edges'));
  for (const [name, casePath] of cases) {
    const path = typeof casePath === 'string' ? casePath : casePath();
    // no warm-up: the first five runs and the later ones are reported apart, as the list bench does
    const times: number[] = [];
    try {
      for (let i = 0; i < SAMPLES; i += 1) {
        const t0 = performance.now();
        const body = await get(path);
        times.push(performance.now() - t0);
        if (path === year) page2 = body.meta?.next_cursor ?? '';
      }
    } catch (error) {
      // a case the service cannot answer within its statement timeout is a result too
      console.log(`${name.padEnd(48)}\t${(error as Error).message.slice(0, 160)}`);
      continue;
    }
    const stats = (part: number[]) => {
      const sorted = [...part].sort((a, b) => a - b);
      return `p50 ${percentile(sorted, 0.5).toFixed(1)} ms\tp99 ${percentile(sorted, 0.99).toFixed(1)} ms`;
    };
    console.log(`${name.padEnd(48)}\tfirst ${FIRST}: ${stats(times.slice(0, FIRST))}\tlater: ${stats(times.slice(FIRST))}\tload ${loadAverage()}`);
  }
  // each answer against a direct aggregate over the conversations, for the windows whose edges cut days
  const client = new Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  for (const [name, edgesPath] of edged) {
    const params = new URLSearchParams(edgesPath.split('?')[1]);
    const answered = (await get(edgesPath)).data?.totals;
    const { rows } = await client.query(
      `with w as (select * from conversations where org_id = $1 and agent_id = $2 and created_at >= $3 and created_at <= $4)
       select count(*)::int as conversations, coalesce(sum(message_count), 0)::float8 as messages, coalesce(sum(credits_used), 0)::float8 as credits_used,
         (count(*) filter (where autonomous))::int as autonomous, (count(*) filter (where not autonomous))::int as non_autonomous,
         (count(*) filter (where is_simulation))::int as simulations, (select count(distinct t)::int from w, unnest(w.ticket_ids) t) as distinct_tickets,
         json_build_object('dashboard', count(*) filter (where source = 'dashboard'), 'autonomous', count(*) filter (where source = 'autonomous'),
           'embed', count(*) filter (where source = 'embed'), 'sub-agent', count(*) filter (where source = 'sub-agent')) as by_source
       from w`,
      [BIG_ORG, busiest, params.get('since'), params.get('until')],
    );
    const same = JSON.stringify(answered) === JSON.stringify(rows[0]);
    console.log(`${name}: totals ${same ? 'equal' : 'DIFFER from'} the direct aggregate: ${JSON.stringify(answered)}${same ? '' : ` vs ${JSON.stringify(rows[0])}`}`);
  }
  await client.end();
  await app.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
