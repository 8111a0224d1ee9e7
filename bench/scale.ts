/**
 * `npm run bench:scale`: the service at scale on a PostgreSQL server.
 *
 *   DATABASE_URL=postgres://… BENCH_SCALE=100k|1m|10m npm run bench:scale
 *
 * Migrates, seeds the scale dataset (bench/scale-seed.ts; a database that
 * already holds it is reused), starts the service on that database and
 * measures through HTTP, sequentially: every conversation list case (each
 * filter with a common, a rare and a matching-nothing value, every pair of
 * filters where one value is rare or matches nothing, time ranges, metadata,
 * tickets, `q` at every term frequency, alone, combined and on a deep page),
 * 200 pages of `next_cursor`, the 20,000-message thread, the busiest agent's
 * analytics, and a small organization's queries. Each case runs at least 20
 * times with no warm-up, and its first five and later runs are reported apart
 * (a named prepared statement may change its plan after its fifth run); the
 * process's own first request, `GET /org`, comes before them all. Per
 * list case also the server's side: the plan the service runs, its planning
 * time, and what a forced generic plan would cost. Prints the
 * `EXPLAIN (ANALYZE, BUFFERS)` of the slowest list query. BENCH_SCALE_CASES=<regex>
 * runs only the list cases whose names match; BENCH_SCALE_GENERIC=named forces generic plans
 * of the named statements only. BENCH_SCALE_SEED_ONLY=1
 * stops after seeding; BENCH_SCALE_JOBS=1 also runs (`only`: only runs) the purge jobs under a fixed
 * request rate (bench/scale-jobs.ts; they consume the expired rows: once per seed).
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { fillPlaceholders } from 'drizzle-orm';
import { Pool } from 'pg';
import { AppModule } from '../src/app.module';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { APP_OPTIONS, composeHttpApp } from '../src/http-app';
import { createHttpAdapter } from '../src/http/adapter';
import { metricsFor } from '../src/metrics/metrics.module';
import { createLogger, type AppLogger } from '../src/common/logger';
import { loadConfig, type AppConfig } from '../src/config/config';
import type { ConversationFilters } from '../src/conversations/conversations.filters';
import { ConversationListQueryPipe } from '../src/conversations/conversations.filters';
import { ConversationsRepository, Q_TRIGRAM_MATCHES } from '../src/conversations/conversations.repository';
import { DatabaseConnection } from '../src/database/connection';
import { runJobsUnderLoad } from './scale-jobs';
import { BIG_ORG, COMMON_WORD, RARE_WORD, SEARCH_TERMS, bigAgentId, reseedJobRows, seedScale, smallOrgId } from './scale-seed';
import { loadAverage } from './support';

const SIZES: Record<string, number> = { '100k': 100_000, '1m': 1_000_000, '10m': 10_000_000 };
// no warm-up: a named prepared statement may switch to its generic plan after five executions, so the
// first five runs and the later ones are reported apart (at least 20 runs)
const SAMPLES = Math.max(20, Number(process.env.BENCH_SCALE_SAMPLES ?? 25));
const FIRST = 5;

interface Timing {
  name: string;
  /** p50 / p99 of the first five runs and of the later ones */
  first: { p50: number; p99: number };
  after: { p50: number; p99: number };
  rows: number;
  query?: string;
  /** server-side execution time of the plan the service runs (list cases) */
  serverMs?: number;
}

/** What the server does for one statement: execution and planning ms, shared buffers, rows. */
interface ServerSide {
  ms: number;
  planMs: number;
  buffers: number;
  rows: number;
}

export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? NaN;

/** The database of DATABASE_URL, migrated (printing how long: a migration that builds a rollup backfills it). */
export async function openScaleDatabase(): Promise<{ config: AppConfig; logger: AppLogger; connection: DatabaseConnection }> {
  // sequential samples from one key: the per-key request budget is not what is measured here
  const env = { ...process.env, LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_PER_HOUR: '100000000' };
  const config = loadConfig(env, { jobsEnabled: false });
  const logger = createLogger(config);
  const connection = await DatabaseConnection.open(config, logger);
  const migrateStarted = performance.now();
  await connection.migrate();
  console.log(`migrations applied in ${((performance.now() - migrateStarted) / 1000).toFixed(1)} s (load average ${loadAverage()})`);
  return { config, logger, connection };
}

/**
 * The process's own first requests (Node compiling the pipeline's code, the key's first lookup) belong to no case:
 * two `GET /org` before them all, a route that runs no conversation or analytics statement, so no case's plan or
 * pages are warmed by them; printed on their own line. The key needs `org:read`.
 */
export async function timeFirstRequests(get: (path: string) => Promise<unknown>): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < 2; i += 1) {
    const t0 = performance.now();
    await get('/org');
    times.push(performance.now() - t0);
  }
  console.log(`the service's first two requests, GET /org before any case: ${times.map((ms) => ms.toFixed(1)).join(' / ')} ms`);
}

/** The service on that database, listening on a free local port. */
export async function startScaleApp(config: AppConfig, logger: AppLogger, connection: DatabaseConnection): Promise<{ app: INestApplication; base: string }> {
  const metrics = metricsFor(config);
  const app = await NestFactory.create(AppModule.forRoot(config, logger, { connection, metrics }), createHttpAdapter(logger, metrics), { ...APP_OPTIONS, logger: false });
  composeHttpApp(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, base: `http://127.0.0.1:${port}/api/v1` };
}

async function main(): Promise<void> {
  const size = (process.env.BENCH_SCALE ?? '100k').toLowerCase();
  const n = SIZES[size];
  if (!n) throw new Error(`BENCH_SCALE must be one of ${Object.keys(SIZES).join(', ')}`);
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL must name a PostgreSQL server (the scale bench does not run on the embedded engine)');
  console.log(`scale bench: ${size} (${n.toLocaleString('en')} conversations in the big organization), load average ${loadAverage()}`);

  const { config, logger, connection } = await openScaleDatabase();
  const pool = new Pool({ connectionString: databaseUrl, max: 2 });
  const started = performance.now();
  const seeded = await seedScale(pool, n, (line) => console.log(line));
  console.log(
    seeded.reused
      ? `reused the seeded database: ${seeded.bigConversations} + ${seeded.smallConversations} conversations`
      : `seeded ${seeded.bigConversations} + ${seeded.smallConversations} conversations in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );

  if (process.env.BENCH_SCALE_SEED_ONLY === '1') {
    await pool.end();
    await connection.close();
    return;
  }

  const { app, base } = await startScaleApp(config, logger, connection);
  const keys = app.get(ApiKeysService);
  const scopes = ['conversations:read', 'analytics:read', 'org:read'];
  const bigKey = (await keys.create({ orgId: BIG_ORG, label: 'scale bench', scopes })).token;
  const small = smallOrgId(500);
  const smallKey = (await keys.create({ orgId: small, label: 'scale bench', scopes })).token;
  const get = async (token: string, path: string) => {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { data?: unknown; meta?: { next_cursor?: string | null } };
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const time = async (name: string, token: string, path: string): Promise<Timing> => {
    const times: number[] = [];
    let rows = 0;
    for (let i = 0; i < SAMPLES; i += 1) {
      const t0 = performance.now();
      try {
        const body = await get(token, path);
        rows = Array.isArray(body.data) ? body.data.length : 1;
      } catch (error) {
        // a case the service cannot answer in time is a result too
        console.log(`${name.padEnd(48)}\trun ${i + 1}: ${(error as Error).message.slice(0, 160)}`);
        return { name, first: { p50: NaN, p99: NaN }, after: { p50: NaN, p99: NaN }, rows: 0, query: path };
      }
      times.push(performance.now() - t0);
    }
    const stats = (part: number[]) => {
      const sorted = [...part].sort((a, b) => a - b);
      return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
    };
    return { name, first: stats(times.slice(0, FIRST)), after: stats(times.slice(FIRST)), rows, query: path };
  };

  // values read from the data, so every size finds its own common and rare ones
  const one = async <T>(text: string, values: unknown[] = []) => (await pool.query(text, values)).rows[0] as T;
  const busiest = bigAgentId(0);
  const quiet = bigAgentId(150);
  const parent = await one<{ p: string }>(`select parent_conversation_id as p from conversations where org_id = $1 and source = 'sub-agent' order by id desc limit 1 offset 1000`, [BIG_ORG]);
  const ticketed = await one<{ t: string }>(`select ticket_ids[1] as t from conversations where org_id = $1 and cardinality(ticket_ids) > 0 order by id limit 1 offset 100`, [BIG_ORG]);
  const meta = await one<{ t: string }>(`select metadata->>'ticketId' as t from conversations where org_id = $1 and metadata is not null order by id limit 1 offset 50`, [BIG_ORG]);
  const thread = await one<{ id: string }>(`select conversation_id as id from messages where org_id = $1 group by conversation_id order by count(*) desc limit 1`, [BIG_ORG]);
  const day = 86_400_000;
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const monthsAgo20 = now - 600 * day;
  const cases: Array<[string, string]> = [
    ['first page, no filter', ''],
    ['source=embed (common)', 'source=embed'],
    ['source=sub-agent (rare)', 'source=sub-agent'],
    ['agent_id busiest', `agent_id=${busiest}`],
    ['agent_id rare', `agent_id=${quiet}`],
    ['agent_id unknown (matches nothing)', 'agent_id=agent_5ca1e2ffffffffffffffffff'],
    ['model=gpt-4o (common)', 'model=gpt-4o'],
    ['model=o1-rare (rare)', 'model=o1-rare'],
    ['model=none (matches nothing)', 'model=none'],
    ['source=embed + model=gpt-4o (nothing)', 'source=embed&model=gpt-4o'],
    ['source=autonomous + model=o1-rare', 'source=autonomous&model=o1-rare'],
    ['agent_id busiest + source', `agent_id=${busiest}&source=autonomous`],
    ['agent_id busiest + model rare', `agent_id=${busiest}&model=o1-rare`],
    ['agent_id busiest + model none', `agent_id=${busiest}&model=none`],
    ['agent_id + source + model + 7-day created', `agent_id=${busiest}&source=dashboard&model=gpt-4o&created_after=${iso(now - 300 * day)}&created_before=${iso(now - 293 * day)}`],
    ['source + model + 7-day created', `source=embed&model=gpt-4o&created_after=${iso(now - 300 * day)}&created_before=${iso(now - 293 * day)}`],
    ['created one day 20 months ago', `created_after=${iso(monthsAgo20)}&created_before=${iso(monthsAgo20 + day)}`],
    ['created_after last 7 days', `created_after=${iso(now - 7 * day)}`],
    ['created_before 300 days ago', `created_before=${iso(now - 300 * day)}`],
    ['last_message_after recent', `last_message_after=${iso(now - day)}`],
    ['last_message_before far back', `last_message_before=${iso(now - 700 * day)}`],
    ['since long ago', `since=${iso(now - 700 * day)}`],
    ['metadata[channel]=email', 'metadata[channel]=email'],
    ['metadata[ticketId] (one row)', `metadata[ticketId]=${meta.t}`],
    ['metadata[channel]=none (nothing)', 'metadata[channel]=fax'],
    ['ticket_id (one row)', `ticket_id=${ticketed.t}`],
    ['ticket_id unknown', 'ticket_id=no-such-ticket'],
    ['parent_conversation_id', `source=sub-agent&parent_conversation_id=${parent.p}`],
    ['conversation_number', `conversation_number=${Math.floor(n / 3)}`],
    ['is_simulation=true', 'is_simulation=true'],
    ['is_onboarding=true', 'is_onboarding=true'],
    [`q=${COMMON_WORD} (common)`, `q=${COMMON_WORD}`],
    [`q=${RARE_WORD} (rare)`, `q=${RARE_WORD}`],
    ['q=zzzz (nothing)', 'q=zzzzqq'],
    [`agent_id busiest + q=${RARE_WORD}`, `agent_id=${busiest}&q=${RARE_WORD}`],
  ];

  // `q` at every term frequency (bench/scale-seed.ts SEARCH_TERMS), alone, with a skewed filter, and on a deep page
  const terms: Array<[string, string]> = [
    ['none', 'zzzzqq'],
    ...SEARCH_TERMS.map((t): [string, string] => [t.share === 0 ? 'one title' : `${t.share * 100} % ${t.from === undefined ? 'spread' : 'bunched'}`, t.word]),
    ['0.001 % spread', RARE_WORD],
    ['50 % spread', COMMON_WORD],
  ];
  for (const [label, word] of terms) {
    cases.push([`q ${word} (${label})`, `q=${word}`]);
    cases.push([`q ${word} (${label}) + agent_id busiest`, `q=${word}&agent_id=${busiest}`]);
    cases.push([`q ${word} (${label}) + source=dashboard`, `q=${word}&source=dashboard`]);
  }

  // every pair of filters where one side is rare or matches nothing (same-column pairs left out)
  const absentConversation = 'conv_00000001ffffffffffffffff';
  const values: Record<string, Partial<Record<'common' | 'rare' | 'none', string>>> = {
    source: { common: 'source=dashboard', rare: 'source=sub-agent' },
    agent: { common: `agent_id=${busiest}`, rare: `agent_id=${quiet}`, none: 'agent_id=agent_5ca1e2ffffffffffffffffff' },
    model: { common: 'model=gpt-4o', rare: 'model=o1-rare', none: 'model=none' },
    simulation: { common: 'is_simulation=false', rare: 'is_simulation=true' },
    onboarding: { common: 'is_onboarding=false', rare: 'is_onboarding=true' },
    q: { common: `q=${COMMON_WORD}`, rare: `q=${RARE_WORD}`, none: 'q=zzzzqq' },
    metadata: { common: 'metadata[channel]=email', rare: `metadata[ticketId]=${meta.t}`, none: 'metadata[channel]=fax' },
    ticket: { rare: `ticket_id=${ticketed.t}`, none: 'ticket_id=no-such-ticket' },
    created: {
      common: `created_after=${iso(now - 7 * day)}`,
      rare: `created_after=${iso(monthsAgo20)}&created_before=${iso(monthsAgo20 + day)}`,
      none: `created_before=${iso(now - 1000 * day)}`,
    },
    lastMessage: { common: `last_message_after=${iso(now - day)}`, rare: `last_message_before=${iso(now - 700 * day)}`, none: `last_message_before=${iso(now - 1000 * day)}` },
    number: { rare: `conversation_number=${Math.floor(n / 3)}`, none: `conversation_number=${n * 10}` },
    parent: { rare: `parent_conversation_id=${parent.p}`, none: `parent_conversation_id=${absentConversation}` },
  };
  const filterKeys = Object.keys(values);
  for (const [i, a] of filterKeys.entries()) {
    for (const b of filterKeys.slice(i + 1)) {
      for (const [va, qa] of Object.entries(values[a])) {
        for (const [vb, qb] of Object.entries(values[b])) {
          if (va === 'common' && vb === 'common') continue;
          cases.push([`pair ${a}:${va} + ${b}:${vb}`, `${qa}&${qb}`]);
        }
      }
    }
  }
  const only = process.env.BENCH_SCALE_CASES ? new RegExp(process.env.BENCH_SCALE_CASES) : null;
  const chosen = cases.filter(([name]) => !only || only.test(name));

  // what the server does for one list request, with the plan the service gets (generic for a prepared
  // shape, custom otherwise): its execution time and pages touched do not depend on the machine's load
  const repository = app.get(ConversationsRepository);
  const explainClient = await pool.connect();
  // a forced generic plan may walk millions of rows: past this it counts as timed out (Infinity)
  await explainClient.query(`set statement_timeout = '10s'`);
  const timedOut: ServerSide = { ms: Infinity, planMs: 0, buffers: NaN, rows: 0 };
  // BENCH_SCALE_GENERIC=named: the forced generic plan only of the named statements (the only ones a generic plan
  // can serve); at 10 M the others' generic plans may each run to the 10 s timeout, which makes the bench hours long
  const namedOnly = process.env.BENCH_SCALE_GENERIC === 'named';
  const skipped: ServerSide = { ms: NaN, planMs: 0, buffers: NaN, rows: 0 };
  const explainOne = async (
    built: { toSQL(): { sql: string; params: unknown[] } },
    values: Record<string, unknown>,
    generic: boolean,
    bitmapOnly: boolean | 'buckets' | 'nojit' = false,
    print?: string,
  ): Promise<ServerSide> => {
    const statement = built.toSQL();
    const params = fillPlaceholders(statement.params, values) as unknown[];
    await explainClient.query(`set plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    // the trigram step runs in a transaction that leaves the planner bitmap scans only (conversations.repository.ts)
    if (bitmapOnly === 'nojit') await explainClient.query('set jit = off');
    else if (bitmapOnly) await explainClient.query('set enable_seqscan = off; set enable_indexscan = off; set enable_indexonlyscan = off; set jit = off');
    // the bucket step also runs without parallel workers
    if (bitmapOnly === 'buckets') await explainClient.query('set max_parallel_workers_per_gather = 0');
    await explainClient.query(`prepare bench_case as ${statement.sql}`);
    try {
      const args = params.map((p) => (typeof p === 'number' ? String(p) : explainClient.escapeLiteral(String(p)))).join(', ');
      if (print !== undefined) {
        const text = await explainClient.query(`explain (analyze, buffers) execute bench_case${params.length ? `(${args})` : ''}`);
        console.log(`${print}\n${text.rows.map((row: Record<string, string>) => `    ${row['QUERY PLAN']}`).join('\n')}`);
      }
      const res = await explainClient.query(`explain (analyze, buffers, format json) execute bench_case${params.length ? `(${args})` : ''}`);
      const [top] = res.rows[0]['QUERY PLAN'] as Array<{
        'Execution Time': number;
        'Planning Time': number;
        Plan: { 'Actual Rows': number; 'Shared Hit Blocks': number; 'Shared Read Blocks': number };
      }>;
      return { ms: top['Execution Time'], planMs: top['Planning Time'], buffers: top.Plan['Shared Hit Blocks'] + top.Plan['Shared Read Blocks'], rows: top.Plan['Actual Rows'] };
    } finally {
      await explainClient.query('deallocate bench_case');
      await explainClient.query('reset plan_cache_mode; reset enable_seqscan; reset enable_indexscan; reset enable_indexonlyscan; reset jit; reset max_parallel_workers_per_gather');
    }
  };
  const add = (a: ServerSide, b: ServerSide): ServerSide => ({ ms: a.ms + b.ms, planMs: a.planMs + b.planMs, buffers: a.buffers + b.buffers, rows: b.rows });
  /** the statements the service runs for this list request, in order, with the plan it gets, and the same with forced generic plans */
  const explainList = async (query: string, print = false) => {
    // the list query itself (the walk), after the steps before it
    const explainFull = async (before: ServerSide, beforeGeneric: ServerSide, steps: string) => {
      const full = await explainOne(plan.build(connection.db), plan.values, plan.planStable, false, print ? `the list query (${plan.planStable ? 'generic' : 'custom'} plan):` : undefined);
      const generic = namedOnly && !plan.planStable ? skipped : await explainOne(plan.build(connection.db), plan.values, true).catch(() => timedOut);
      return { service: add(before, full), generic: add(beforeGeneric, generic), steps, named: plan.planStable };
    };
    const request = new ConversationListQueryPipe().transform(Object.fromEntries(new URLSearchParams(query)));
    const filters = request.filters as ConversationFilters;
    // the term's share may skip the probe (its statement, 0.3-0.45 ms, is not counted here)
    const route = await repository.termRoute(filters, 26);
    const probe = route?.probeRows === 0 ? null : repository.probe(BIG_ORG, filters, null, 26, route?.probeRows);
    const plan = repository.listQuery(BIG_ORG, filters, null, 26);
    let service: ServerSide = { ms: 0, planMs: 0, buffers: 0, rows: 0 };
    let generic: ServerSide = { ms: 0, planMs: 0, buffers: 0, rows: 0 };
    let steps = 'walk';
    if (probe || route) {
      steps = 'no probe';
      if (probe) {
        // below a *_before bound the probe runs without JIT (conversations.repository.ts)
        const probeMode = probe.split ? 'nojit' : false;
        const first = await explainOne(probe.build(connection.db), probe.values, false, probeMode, print ? 'the probe of the newest rows:' : undefined);
        service = add(service, first);
        generic = add(generic, namedOnly ? skipped : await explainOne(probe.build(connection.db), probe.values, true, probeMode).catch(() => timedOut));
        steps = 'probe';
        if (first.rows >= 26) return { service, generic, steps, named: false };
      }
      if (!route) return explainFull(service, generic, `${steps}+walk`);
      // the id buckets, newest first (the scope statement before them is two index lookups and one of 5,000 entries)
      const explainBuckets = async (before: string) => {
        const [scope] = await repository.bucketScope.execute({ orgId: BIG_ORG, q: filters.q });
        const buckets = repository.qBuckets(BIG_ORG, filters, null, 26, scope);
        if (!buckets) return null;
        // a named statement with its generic plan (conversations.repository.ts, BUCKET_SCANS)
        const third = await explainOne(buckets.build(connection.db), buckets.values, true, 'buckets', print ? 'the id buckets (bitmap scans only, no parallel workers, generic plan):' : undefined);
        // the buckets stop at their row bound without a full page: the service goes on to the next step
        if ((await repository.listByBuckets(BIG_ORG, filters, null, 26, scope)) === null) {
          service = add(service, third);
          steps = `${before}+buckets(bounded)`;
          return null;
        }
        return {
          service: add(service, third),
          // the service already runs its generic plan: the forced generic plan is the one measured above
          generic: add(generic, third),
          steps: `${before}+buckets`,
          named: false,
        };
      };
      // a term the statistics call frequent skips the trigram step, alone or beside filters common enough
      // for the buckets (measured by the density statement, whose cost is counted here)
      if (route.bucketsFirst) {
        const density = Object.keys(filters).length === 1 ? null : repository.qDensity(BIG_ORG, filters, null);
        if (density) {
          const measured = await explainOne(density.build(connection.db), density.values, false, false, print ? 'the filters\' density:' : undefined);
          service = add(service, measured);
          generic = add(generic, namedOnly ? skipped : await explainOne(density.build(connection.db), density.values, true).catch(() => timedOut));
          steps = `${steps}+density`;
        }
        const [scope] = await repository.bucketScope.execute({ orgId: BIG_ORG, q: filters.q });
        if (!density || (scope && (await repository.commonFilters(BIG_ORG, filters, null, scope)))) {
          const byBuckets = await explainBuckets(steps);
          if (byBuckets) return byBuckets;
        }
      }
      const trigram = repository.qTrigram(BIG_ORG, filters, null, 26, route)!;
      const second = await explainOne(trigram.build(connection.db), trigram.values, false, true, print ? 'the trigram index (bitmap scans only):' : undefined);
      service = add(service, second);
      generic = add(generic, namedOnly ? skipped : await explainOne(trigram.build(connection.db), trigram.values, true, true).catch(() => timedOut));
      steps = `${steps}+trigram`;
      // the newest row carries how many matches the index returned: below the bound the page is exact
      const built = trigram.build(connection.db).toSQL();
      await explainClient.query('begin; set local enable_seqscan = off; set local enable_indexscan = off; set local enable_indexonlyscan = off; set local jit = off');
      const res = await explainClient.query(built.sql, fillPlaceholders(built.params, trigram.values) as unknown[]).finally(() => explainClient.query('rollback'));
      if (res.rows.length === 0 || Number(res.rows[0].matched) < Q_TRIGRAM_MATCHES) return { service, generic, steps, named: false };
      const byBuckets = await explainBuckets(steps);
      if (byBuckets) return byBuckets;
      steps = `${steps}+walk`;
    }
    return explainFull(service, generic, steps);
  };

  if (process.env.BENCH_SCALE_JOBS !== 'only') {
    const results: Timing[] = [];
    const fmt = (value: number) => value.toFixed(1).padStart(7);
    const print = (t: Timing, server?: Awaited<ReturnType<typeof explainList>>) =>
      console.log(
        `${t.name.padEnd(56)}\t${String(t.rows).padStart(4)}\t${fmt(t.first.p50)}\t${fmt(t.first.p99)}\t${fmt(t.after.p50)}\t${fmt(t.after.p99)}` +
          (server
            ? `\t${server.service.ms.toFixed(2).padStart(8)}\t${String(server.service.buffers).padStart(7)}\t${server.service.planMs.toFixed(2).padStart(6)}` +
              `\t${server.generic.ms.toFixed(2).padStart(8)}\t${String(server.generic.buffers).padStart(7)}\t${server.named ? 'named' : 'unnamed'}\t${server.steps}`
            : ''),
      );
    console.log('');
    await timeFirstRequests((path) => get(bigKey, path));
    console.log(`GET /conversations?limit=25, big organization, ${SAMPLES} sequential runs per case, no warm-up (ms): first ${FIRST} runs / the later ones; load ${loadAverage()}`);
    console.log('server: EXPLAIN (ANALYZE, BUFFERS) of the statements the service runs (generic plan for a named shape, custom otherwise): execution ms, shared buffers, planning ms;');
    console.log('        then the same statements with a forced generic plan (what a named statement could switch to after five runs)');
    console.log(`${'case'.padEnd(56)}\trows\tfirst-5 p50\tp99\tafter-5 p50\tp99\tserver ms\tbuffers\tplan ms\tgeneric ms\tbuffers\tstatement\tsteps`);
    const planning: number[] = [];
    for (const [name, query] of chosen) {
      const path = `/conversations?limit=25${query ? `&${query}` : ''}`;
      const t = await time(name, bigKey, path);
      const server = await explainList(query).catch(() => ({ service: timedOut, generic: timedOut, steps: 'timed out', named: false }));
      if (!server.named) planning.push(server.service.planMs);
      results.push({ ...t, serverMs: server.service.ms });
      print(t, server);
      // a case the service could not answer has no deep page to follow
      if (!/^q \S+ \([^)]*\)$/.test(name) || Number.isNaN(t.first.p50)) continue;
      // a deep page of the term alone: 40 pages of 25 in (HTTP only: the cursor is the service's own)
      let cursor: string | null | undefined = null;
      try {
        for (let page = 1; page <= 40; page += 1) {
          cursor = (await get(bigKey, `${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).meta?.next_cursor;
          if (!cursor) break;
        }
      } catch (error) {
        console.log(`${`${name}, pages 2–40`.padEnd(56)}\t${(error as Error).message.slice(0, 160)}`);
        continue;
      }
      if (cursor) {
        const deep = await time(`${name}, page 41`, bigKey, `${path}&cursor=${encodeURIComponent(cursor)}`);
        results.push(deep);
        print(deep);
      }
    }
    planning.sort((a, b) => a - b);
    console.log(`planning per execution of the unnamed list statements: p50 ${percentile(planning, 0.5).toFixed(2)} ms, p99 ${percentile(planning, 0.99).toFixed(2)} ms, max ${planning.at(-1)?.toFixed(2)} ms (${planning.length} cases)`);
    const worst = (key: 'first' | 'after') => results.reduce((a, b) => (b[key].p99 > a[key].p99 ? b : a));
    console.log(`worst p99, first ${FIRST} runs: ${worst('first').name} ${worst('first').first.p99.toFixed(1)} ms; later runs: ${worst('after').name} ${worst('after').after.p99.toFixed(1)} ms`);

    console.log(`\nfollowing next_cursor, source=embed, limit=100 (ms per page)`);
    const pages: number[] = [];
    for (let round = 0; round < 3; round += 1) {
      let cursor: string | null | undefined = null;
      for (let page = 1; page <= 200; page += 1) {
        const t0 = performance.now();
        const body = await get(bigKey, `/conversations?limit=100&source=embed${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        const ms = performance.now() - t0;
        if (round > 0) pages[page] = Math.min(pages[page] ?? Infinity, ms);
        cursor = body.meta?.next_cursor;
        if (!cursor) break;
      }
    }
    console.log(`page 1 / 50 / 200: ${[1, 50, 200].map((p) => pages[p]?.toFixed(1) ?? '-').join(' / ')} (best of two walks)`);

    console.log(`\nthe ${thread.id} thread (GET /conversations/{id}/messages?limit=100)`);
    let after: string | null | undefined = null;
    let page100 = '';
    for (let page = 1; page <= 100; page += 1) {
      const body = await get(bigKey, `/conversations/${thread.id}/messages?limit=100${after ? `&cursor=${encodeURIComponent(after)}` : ''}`);
      if (page === 99) page100 = body.meta?.next_cursor ?? '';
      after = body.meta?.next_cursor;
    }
    for (const [name, path] of [
      ['messages page 1', `/conversations/${thread.id}/messages?limit=100`],
      ['messages page 100', `/conversations/${thread.id}/messages?limit=100&cursor=${encodeURIComponent(page100)}`],
    ]) {
      const t = await time(name, bigKey, path);
      results.push(t);
      print(t);
    }

    console.log(`\nanalytics of the busiest agent`);
    for (const [name, path] of [
      ['analytics busiest, default window', `/analytics/agents/${busiest}`],
      ['analytics busiest, one year', `/analytics/agents/${busiest}?since=${iso(now - 365 * day)}&limit=100`],
    ]) {
      const t = await time(name, bigKey, path);
      results.push(t);
      print(t);
    }

    console.log(`\na small organization (${small})`);
    for (const [name, query] of [
      ['small: first page', ''],
      ['small: metadata[channel]=email', 'metadata[channel]=email'],
      ['small: source=embed + model=gpt-4o', 'source=embed&model=gpt-4o'],
      ['small: q=help', 'q=help'],
    ]) {
      const t = await time(name, smallKey, `/conversations?limit=25${query ? `&${query}` : ''}`);
      results.push(t);
      print(t);
    }

    // the plans of the slowest list case, with the service's own SQL
    // by the server's time: wall time on a loaded machine says more about the load than about the plan
    const slowest = results.filter((t) => t.serverMs !== undefined).sort((a, b) => b.serverMs! - a.serverMs!)[0];
    console.log(`\nslowest list case on the server: ${slowest.name} (${slowest.serverMs!.toFixed(2)} ms; HTTP p99 ${slowest.first.p99.toFixed(1)} / ${slowest.after.p99.toFixed(1)} ms)`);
    await explainList(slowest.query!.split('?')[1].replace(/^limit=25&?/, ''), true);
    explainClient.release();
  }

  if (process.env.BENCH_SCALE_JOBS === '1' || process.env.BENCH_SCALE_JOBS === 'only') {
    const paths = ['', 'source=embed', `agent_id=${busiest}`, 'metadata[channel]=email', `q=${COMMON_WORD}`].map((query) => `/conversations?limit=25${query ? `&${query}` : ''}`);
    await reseedJobRows(pool, (line) => console.log(line));
    await runJobsUnderLoad({ app, pool, get: (path) => get(bigKey, path), paths });
  }
  console.log(`\nload average at the end: ${loadAverage()}`);
  await app.close();
  await pool.end();
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
