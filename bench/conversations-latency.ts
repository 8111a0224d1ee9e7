/**
 * Seeds N conversations (default 100,000) into one organization of an
 * in-memory PGlite and reports the latency of GET /conversations's list query
 * for every filter, plus the plan's scan types (EXPLAIN ANALYZE).
 *
 *   node -r ./bench/register.js bench/conversations-latency.ts [count] [--plans]
 */
import 'reflect-metadata';
import { PGlite } from '@electric-sql/pglite';
import { NestFactory } from '@nestjs/core';
import { fillPlaceholders } from 'drizzle-orm';
import { newId } from '../libs/ids/ids';
import type { ConversationFilters } from '../src/conversations/conversations.filters';
import { AppModule } from '../src/app.module';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { APP_OPTIONS, composeHttpApp } from '../src/http-app';
import { createHttpAdapter } from '../src/http/adapter';
import { metricsFor } from '../src/metrics/metrics.module';
import { createLogger } from '../src/common/logger';
import { loadConfig } from '../src/config/config';
import { ConversationsRepository } from '../src/conversations/conversations.repository';
import { DatabaseConnection, PGLITE_EXTENSIONS } from '../src/database/connection';
import { agents } from '../src/agents/agents.table';
import { orgs } from '../src/database/orgs.table';
import { seedConversations } from './seed-conversations';

const RUNS = 30;

async function main(): Promise<void> {
  const count = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 100_000);
  const showPlans = process.argv.includes('--plans');
  const client = await PGlite.create({ extensions: PGLITE_EXTENSIONS });
  const connection = DatabaseConnection.fromPglite(client);
  await connection.migrate();
  const db = connection.db;

  const orgId = newId('org');
  const otherOrg = newId('org');
  for (const id of [orgId, otherOrg]) {
    await db.insert(orgs).values({
      id,
      name: id,
      slug: id.replace('_', '-'),
      plan: 'pro',
      credits: { total: 0, used: 0, remaining: 0, top_up: 0, reset_at: null },
      limits: { agents: null, connectors: null, sources: null, chatbots: null, scheduled_triggers: null, custom_tool_slots: null },
    });
  }
  const seedStarted = performance.now();
  // a second organization with a tenth of the rows, so org_id has to discriminate
  await seedConversations(db, otherOrg, Math.floor(count / 10));
  await seedConversations(db, orgId, count);
  const seedMs = performance.now() - seedStarted;

  // the repository the app uses (its statements run through the app's TransactionHost)
  const config = loadConfig({ LOG_LEVEL: 'error' }, { pgliteDir: 'memory', jobsEnabled: false });
  const logger = createLogger(config);
  const metrics = metricsFor(config);
  const app = await NestFactory.create(AppModule.forRoot(config, logger, { connection, metrics }), createHttpAdapter(logger, metrics), { ...APP_OPTIONS, logger: false });
  composeHttpApp(app);
  await app.listen(0, '127.0.0.1');
  const repository = app.get(ConversationsRepository);
  const agentId = `agent_${(0x6650a100 + 3).toString(16).padStart(8, '0')}0000000000000000`;
  const [sample] = await repository.list(orgId, { source: 'sub-agent' }, null, 1);
  const [ticketed] = await repository.list(orgId, { source: 'autonomous', conversationNumber: undefined }, null, 1);
  const recent = new Date(Date.now() - 7 * 86_400_000).toISOString();
  const old = new Date(Date.now() - 300 * 86_400_000).toISOString();
  const parent = sample?.parentConversationId ?? 'conv_x';
  const ticket = String((ticketed?.metadata?.ticketId ?? ticketed?.metadata?.ticket_id) ?? 'none');
  const rareTicket = String(100_000 + Math.floor(count / 2));
  const rareTitle = `#${Math.floor(count / 4)}2`;
  const scenarios: Array<[string, ConversationFilters, string]> = [
    ['no filter (newest page)', {}, ''],
    ['agent_id', { agentId }, `agent_id=${agentId}`],
    ['source=autonomous', { source: 'autonomous' }, 'source=autonomous'],
    ['source=sub-agent', { source: 'sub-agent' }, 'source=sub-agent'],
    ['parent_conversation_id (+source=sub-agent)', { source: 'sub-agent', parentConversationId: parent }, `source=sub-agent&parent_conversation_id=${parent}`],
    ['model', { model: 'claude-sonnet-4' }, 'model=claude-sonnet-4'],
    ['conversation_number', { conversationNumber: Math.floor(count / 2) }, `conversation_number=${Math.floor(count / 2)}`],
    ['created_after (last 7 days)', { createdAfter: recent }, `created_after=${recent}`],
    ['created_before (older than 300 days)', { createdBefore: old }, `created_before=${old}`],
    ['last_message_after (last 7 days)', { lastMessageAfter: recent }, `last_message_after=${recent}`],
    ['last_message_before (older than 300 days)', { lastMessageBefore: old }, `last_message_before=${old}`],
    ['ticket_id', { ticketId: ticket }, `ticket_id=${ticket}`],
    ['metadata[channel]=email', { metadata: { channel: 'email' } }, 'metadata[channel]=email'],
    ['metadata[page]=/docs/refund', { metadata: { page: '/docs/refund' } }, 'metadata[page]=/docs/refund'],
    ['metadata[ticketId]=N (rare)', { metadata: { ticketId: rareTicket } }, `metadata[ticketId]=${rareTicket}`],
    ['q=refund', { q: 'refund' }, 'q=refund'],
    ['q=#<n>2 (rare)', { q: rareTitle }, `q=${encodeURIComponent(rareTitle)}`],
    ['is_simulation=true', { isSimulation: true }, 'is_simulation=true'],
    ['is_onboarding=true', { isOnboarding: true }, 'is_onboarding=true'],
    ['agent_id+source+model+created_after', { agentId, source: 'dashboard', model: 'gpt-4o', createdAfter: old }, `agent_id=${agentId}&source=dashboard&model=gpt-4o&created_after=${old}`],
  ];

  console.log(`seeded ${count} conversations (+${Math.floor(count / 10)} in another org) in ${(seedMs / 1000).toFixed(1)} s`);
  console.log(`limit 25 (fetch 26), ${RUNS} runs each after 3 warm-ups; milliseconds`);
  console.log('repository (SQL + row mapping):');
  console.log(['filter'.padEnd(44), 'rows', '  p50', '  p95', '  max', ' plan'].join('\t'));
  for (const [name, filters] of scenarios) {
    for (let i = 0; i < 3; i += 1) await repository.list(orgId, filters, null, 26);
    const times: number[] = [];
    let rows = 0;
    for (let i = 0; i < RUNS; i += 1) {
      const started = performance.now();
      rows = (await repository.list(orgId, filters, null, 26)).length;
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const { build, values } = repository.listQuery(orgId, filters, null, 26);
    const query = build(db).toSQL();
    const plan = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off) ${query.sql}`, fillPlaceholders(query.params, values));
    const lines = plan.rows.map((row) => row['QUERY PLAN']);
    const scans = [...new Set(lines.flatMap((line) => /(Seq Scan|Index Only Scan Backward|Index Scan Backward|Index Only Scan|Index Scan|Bitmap Index Scan|Bitmap Heap Scan)(?: using (\w+))?/.exec(line)?.slice(1, 3).filter(Boolean).join(' ') ?? []))];
    const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(2).padStart(5);
    console.log([name.padEnd(44), String(rows).padStart(4), pct(0.5), pct(0.95), times[times.length - 1].toFixed(2).padStart(5), ' ' + scans.join(', ')].join('\t'));
    if (showPlans) console.log(lines.map((line) => `    ${line}`).join('\n'));
  }

  // the same scenarios through HTTP: auth, validation pipe, cursor, envelope, JSON
  const { port } = app.getHttpServer().address() as { port: number };
  const key = await app.get(ApiKeysService).create({ orgId, label: 'bench', scopes: ['conversations:read'] });
  const get = async (query: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/conversations?limit=25${query ? `&${query}` : ''}`, { headers: { authorization: `Bearer ${key.token}` } });
    const body = (await res.json()) as { data?: unknown[] };
    if (res.status !== 200) throw new Error(`${query}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return body.data?.length ?? 0;
  };
  console.log('\nHTTP GET /api/v1/conversations (limit 25), end to end on localhost:');
  console.log(['filter'.padEnd(44), 'rows', '  p50', '  p95', '  max'].join('\t'));
  for (const [name, , query] of scenarios) {
    for (let i = 0; i < 3; i += 1) await get(query);
    const times: number[] = [];
    let rows = 0;
    for (let i = 0; i < RUNS; i += 1) {
      const started = performance.now();
      rows = await get(query);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(2).padStart(5);
    console.log([name.padEnd(44), String(rows).padStart(4), pct(0.5), pct(0.95), times[times.length - 1].toFixed(2).padStart(5)].join('\t'));
  }

  // analytics of one agent (a twentieth of the conversations): totals + daily series
  await db.insert(agents).values({ id: agentId, orgId, handle: 'bench-agent', name: 'Bench agent' });
  const analytics = async (query: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/analytics/agents/${agentId}${query}`, { headers: { authorization: `Bearer ${analyticsKey.token}` } });
    if (res.status !== 200) throw new Error(`analytics${query}: HTTP ${res.status} ${await res.text()}`);
    return ((await res.json()) as { data: { totals: { conversations: number } } }).data.totals.conversations;
  };
  const analyticsKey = await app.get(ApiKeysService).create({ orgId, label: 'bench', scopes: ['analytics:read'] });
  const yearAgo = new Date(Date.now() - 365 * 86_400_000).toISOString();
  console.log('\nHTTP GET /api/v1/analytics/agents/{agent_id}:');
  for (const [name, query] of [
    ['default window (30 days), 25 days', ''],
    ['365 days, 100 days per page', `?since=${yearAgo}&limit=100`],
  ] as const) {
    for (let i = 0; i < 3; i += 1) await analytics(query);
    const times: number[] = [];
    let total = 0;
    for (let i = 0; i < RUNS; i += 1) {
      const started = performance.now();
      total = await analytics(query);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(2).padStart(5);
    console.log([name.padEnd(44), String(total).padStart(5), pct(0.5), pct(0.95), times[times.length - 1].toFixed(2).padStart(5)].join('\t'));
  }
  await app.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
