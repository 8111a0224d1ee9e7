/**
 * The figures docs/scaling.md's capacity model is built from: seeds N
 * conversations (default 1,000,000) into one organization, then reports the
 * conversations table's size on disk and the latency of GET /conversations
 * (newest page, the bench's two-filter list) and GET /conversations/{id}
 * through the whole app, one request at a time and with 10 in flight.
 * Embedded PGlite in memory by default; a PostgreSQL server with DATABASE_URL.
 *
 *   node -r ./bench/register.js bench/capacity.ts [count]
 */
import 'reflect-metadata';
import { PGlite } from '@electric-sql/pglite';
import { NestFactory } from '@nestjs/core';
import { sql } from 'drizzle-orm';
import { newId } from '../libs/ids/ids';
import { AppModule } from '../src/app.module';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { APP_OPTIONS, composeHttpApp } from '../src/http-app';
import { createHttpAdapter } from '../src/http/adapter';
import { metricsFor } from '../src/metrics/metrics.module';
import { createLogger } from '../src/common/logger';
import { loadConfig } from '../src/config/config';
import { DatabaseConnection, PGLITE_EXTENSIONS } from '../src/database/connection';
import { orgs } from '../src/database/orgs.table';
import { seedConversations } from './seed-conversations';
import { loadAverage } from './support';

const RUNS = 200;
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

async function main(): Promise<void> {
  const count = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 1_000_000);
  const databaseUrl = process.env.DATABASE_URL?.trim() || '';
  const config = loadConfig(
    { LOG_LEVEL: 'error', DATABASE_URL: databaseUrl, CURSOR_SECRET: 'capacity-cursor-secret-0123456789', ENCRYPTION_KEY: Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7)).toString('base64') },
    { pgliteDir: 'memory', jobsEnabled: false, rateLimitPerMinute: 1_000_000, rateLimitPerHour: 100_000_000 },
  );
  const logger = createLogger(config);
  const connection = databaseUrl ? await DatabaseConnection.open(config, logger) : DatabaseConnection.fromPglite(await PGlite.create({ extensions: PGLITE_EXTENSIONS }));
  await connection.migrate();
  const db = connection.db;
  const orgId = newId('org');
  await db.insert(orgs).values({
    id: orgId,
    name: orgId,
    slug: orgId.replace('_', '-'),
    plan: 'pro',
    credits: { total: 0, used: 0, remaining: 0, top_up: 0, reset_at: null },
    limits: { agents: null, connectors: null, sources: null, chatbots: null, scheduled_triggers: null, custom_tool_slots: null },
  });
  console.log(`capacity: ${connection.kind}, node ${process.version}; seeding ${count} conversations (load average ${loadAverage()})`);
  const seedStarted = performance.now();
  await seedConversations(db, orgId, count, { batchSize: 2000 });
  const seedS = (performance.now() - seedStarted) / 1000;
  const sizes = (await db.execute(
    sql`select pg_total_relation_size('conversations')::bigint as total, pg_relation_size('conversations')::bigint as heap, pg_indexes_size('conversations')::bigint as indexes, (select count(*) from conversations)::int as rows`,
  )) as unknown as { rows: Array<{ total: string; heap: string; indexes: string; rows: number }> };
  const size = sizes.rows[0];
  const perMillion = (bytes: string) => mib((Number(bytes) * 1_000_000) / size.rows);
  console.log(`seeded in ${seedS.toFixed(0)} s (${(count / seedS).toFixed(0)} rows/s; load average ${loadAverage()})`);
  console.log(
    `conversations: ${size.rows} rows; total ${mib(Number(size.total))} MiB (heap ${mib(Number(size.heap))}, indexes ${mib(Number(size.indexes))}, TOAST and the rest ${mib(Number(size.total) - Number(size.heap) - Number(size.indexes))}); ` +
      `per million rows: total ${perMillion(size.total)} MiB, heap ${perMillion(size.heap)} MiB, indexes ${perMillion(size.indexes)} MiB`,
  );
  const ids = ((await db.execute(sql`select id from conversations where org_id = ${orgId} and id > (select min(id) from conversations) order by id limit 1`)) as unknown as { rows: Array<{ id: string }> }).rows;
  const sample = ((await db.execute(sql`select id from conversations tablesample system (1) where org_id = ${orgId} limit ${RUNS}`)) as unknown as { rows: Array<{ id: string }> }).rows.map((r) => r.id);
  if (sample.length === 0) sample.push(ids[0].id);
  const agentId = `agent_${(0x6650a100 + 3).toString(16).padStart(8, '0')}0000000000000000`;

  const metrics = metricsFor(config);
  const app = await NestFactory.create(AppModule.forRoot(config, logger, { connection, metrics }), createHttpAdapter(logger, metrics, config), { ...APP_OPTIONS, logger: false });
  composeHttpApp(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const key = await app.get(ApiKeysService).create({ orgId, label: 'capacity', scopes: ['conversations:read'] });
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, { headers: { authorization: `Bearer ${key.token}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
  };
  const paths: Array<[string, (i: number) => string]> = [
    ['GET /conversations (newest 25)', () => '/conversations?limit=25'],
    ['GET /conversations?agent_id&source', () => `/conversations?agent_id=${agentId}&source=dashboard`],
    ['GET /conversations/{id}', (i) => `/conversations/${sample[i % sample.length]}`],
  ];
  console.log(`\nthrough the app (auth, pipe, envelope) on localhost; one at a time: ${RUNS} requests after 20 warm-ups; 10 in flight: 5 s (load average ${loadAverage()})`);
  console.log('| path | p50 ms | p95 ms | p99 ms | req/s, 10 in flight |');
  console.log('|---|---|---|---|---|');
  for (const [name, path] of paths) {
    for (let i = 0; i < 20; i++) await get(path(i));
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      await get(path(i));
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(1);
    let done = 0;
    const until = performance.now() + 5000;
    await Promise.all(
      Array.from({ length: 10 }, async (_, worker) => {
        for (let i = worker; performance.now() < until; i += 10) {
          await get(path(i));
          done++;
        }
      }),
    );
    console.log(`| ${name} | ${at(0.5)} | ${at(0.95)} | ${at(0.99)} | ${(done / 5).toFixed(0)} |`);
  }
  console.log(`\nprocess RSS ${mib(process.memoryUsage().rss)} MiB (the embedded engine's data lives in it); load average ${loadAverage()}`);
  await app.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
