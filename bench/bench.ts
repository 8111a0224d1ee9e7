import autocannon, { type Result } from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_PATHS, type BenchContext, type BenchPath } from './routes';
import { AGENTS, CONVERSATIONS, seed } from './seed';

/**
 * `npm run bench`: seeds the volume dataset, starts the BUILT server and two
 * baselines one after the other on the same database, and prints req/s at 50
 * connections and p50/p99 at a fixed 200 req/s for each main path, with the
 * ratios to the baselines. Embedded PGlite by default; DATABASE_URL when set.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const RATE = 200;
const ROOT = join(__dirname, '..', '..');

interface Measure {
  rps: number;
  p50: number;
  p99: number;
  /** process CPU (user + system, every thread) per request in the fixed-rate phase, µs; NaN where /proc is missing */
  cpuUs: number;
  non2xx: number;
  errors: number;
}

const CLOCK_TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process, in µs (Linux /proc), or NaN. */
function cpuTimeUs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the fields after the command name (which may hold spaces) in parentheses
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}
type Target = 'service' | 'service, metrics on' | 'baseline (a) memory' | 'baseline (b) data';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function start(name: string, script: string, env: Record<string, string>, logFile: string): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const out = openSync(logFile, 'a');
  const child = spawn(process.execPath, [script], { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', out, out] });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}; see ${logFile}`);
    try {
      const res = await fetch(`${base}/api/v1/`);
      await res.arrayBuffer();
      if (res.status < 500) return { child, base };
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`${name} did not start; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

function run(base: string, path: BenchPath, ctx: BenchContext, options: { connections: number; duration: number; overallRate?: number }, counter: { n: number }): Promise<Result> {
  return autocannon({
    url: base,
    connections: options.connections,
    duration: options.duration,
    overallRate: options.overallRate,
    headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/json' },
    requests: [
      {
        method: path.method,
        setupRequest: (req) => {
          counter.n += 1;
          return { ...req, method: path.method, path: path.path(ctx, counter.n), body: path.body?.(ctx, counter.n) };
        },
      },
    ],
  });
}

/**
 * Latency at a truly fixed rate: one request every 1000/RATE ms (open loop,
 * over keep-alive connections opened as needed), each timed from the moment
 * it was due, so a late send counts against the server (no coordinated
 * omission). autocannon's `overallRate` is not this: each connection sends
 * its share of the second back to back at the start of every second, then
 * idles (200-request bursts at 20 concurrent), and it "corrects" every
 * sample above 1 ms with synthetic ones (expected interval ceil(1/rate) =
 * 1 ms), which measured queueing behind the burst, not the service.
 */
async function paced(base: string, path: BenchPath, ctx: BenchContext, rate: number, seconds: number, counter: { n: number }): Promise<Omit<Measure, 'rps' | 'cpuUs'>> {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const interval = 1000 / rate;
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const pending: Array<Promise<void>> = [];
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
    counter.n += 1;
    const n = counter.n;
    const body = path.body?.(ctx, n);
    // timed from when it was due, or from when it left if the timer let it go a little early
    const from = Math.min(due, performance.now());
    pending.push(
      new Promise<void>((resolve) => {
        const req = request(
          {
            agent,
            host: url.hostname,
            port: url.port,
            method: path.method,
            path: path.path(ctx, n),
            headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/json', ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              latencies.push(performance.now() - from);
              if ((res.statusCode ?? 0) >= 300) non2xx += 1;
              resolve();
            });
          },
        );
        req.on('error', () => {
          errors += 1;
          resolve();
        });
        req.end(body);
      }),
    );
  }
  await Promise.all(pending);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : NaN);
  return { p50: at(0.5), p99: at(0.99), non2xx, errors };
}

async function measure(server: { base: string; child: ChildProcess }, path: BenchPath, ctx: BenchContext, counter: { n: number }): Promise<Measure> {
  const { base } = server;
  await run(base, path, ctx, { connections: 10, duration: 1 }, counter); // warm-up (JIT, caches, prepared statements)
  const load = await run(base, path, ctx, { connections: 50, duration: SECONDS }, counter);
  const cpuBefore = cpuTimeUs(server.child.pid);
  const fixed = await paced(base, path, ctx, RATE, SECONDS, counter);
  const cpuUs = (cpuTimeUs(server.child.pid) - cpuBefore) / Math.round(RATE * SECONDS);
  return {
    rps: load.requests.average,
    p50: fixed.p50,
    p99: fixed.p99,
    cpuUs,
    non2xx: load.non2xx + fixed.non2xx,
    errors: load.errors + load.timeouts + fixed.errors,
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const databaseUrl = process.env.DATABASE_URL?.trim() || '';
  const engine = databaseUrl ? 'postgres' : 'pglite';
  if (!existsSync(join(ROOT, 'dist', 'src', 'main.js'))) throw new Error('dist/src/main.js missing: npm run build');
  const work = mkdtempSync(join(tmpdir(), 'agent-platform-bench-'));
  const logFile = join(work, 'servers.log');
  const pgliteDir = join(work, 'pglite');
  const dbEnv: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : { DATABASE_URL: '', PGLITE_DIR: pgliteDir };
  const secrets = { CURSOR_SECRET: process.env.CURSOR_SECRET ?? 'bench-cursor-secret-0123456789', ENCRYPTION_KEY: process.env.ENCRYPTION_KEY ?? randomBytes(32).toString('base64') };

  try {
    console.log(`bench: engine ${engine}; seeding ${AGENTS} agents and ${CONVERSATIONS} conversations in one organization...`);
    const seedStarted = Date.now();
    const seeded = await seed(databaseUrl ? { databaseUrl } : { pgliteDir });
    console.log(`bench: seeded in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s`);
    const ctx: BenchContext = { ...seeded, runTag: randomBytes(3).toString('hex').replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)]) };
    const counter = { n: 0 };
    const results = new Map<string, Partial<Record<Target, Measure>>>();

    // the service, as users run it (default log level: one line per request; metrics off, the default)
    const serviceEnv = { ...dbEnv, ...secrets, HOST: '127.0.0.1', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_PER_HOUR: '100000000', TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' };
    const service = await start('service', 'dist/src/main.js', serviceEnv, logFile);
    const available: BenchPath[] = [];
    const bodies: Array<{ method: string; pattern: string; status: number; data: unknown }> = [];
    for (const path of BENCH_PATHS) {
      const res = await fetch(service.base + path.path(ctx, 0), {
        method: path.method,
        headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/json' },
        body: path.body?.(ctx, 0),
      });
      const body = (await res.json()) as { data?: unknown; error?: { code?: string } };
      if (res.status === 404 && body.error?.code === 'not_found') {
        console.log(`bench: ${path.name} skipped: the service has no such endpoint (404) on this build`);
        continue;
      }
      if (res.status >= 300) throw new Error(`${path.name} answered ${res.status}: ${JSON.stringify(body)}`);
      available.push(path);
      const pattern = '^' + path.path(ctx, 0).split('?')[0].replace(/agent_[0-9a-f]{24}/, '[^/?]+').replace(/[?]/g, '\\?') + '(\\?.*)?$';
      bodies.push({ method: path.method, pattern, status: res.status, data: body.data });
    }
    for (const path of available) {
      console.log(`bench: service ${path.name}`);
      results.set(path.name, { service: await measure(service, path, ctx, counter) });
    }
    await stop(service.child);

    // the same build with metrics on (METRICS_PORT): what collecting them costs per request
    const metricsPort = await freePort();
    const metered = await start('service, metrics on', 'dist/src/main.js', { ...serviceEnv, METRICS_PORT: String(metricsPort) }, logFile);
    for (const path of available) {
      console.log(`bench: service, metrics on ${path.name}`);
      results.get(path.name)!['service, metrics on'] = await measure(metered, path, ctx, counter);
    }
    const scrape = await metricsSummary(`http://127.0.0.1:${metricsPort}/metrics`);
    await stop(metered.child);

    // (b) same SQL, same database (PGlite: the directory is free again now)
    const data = await start('baseline (b)', 'dist/bench/baseline-data.js', dbEnv, logFile);
    for (const path of available) {
      console.log(`bench: baseline (b) ${path.name}`);
      results.get(path.name)!['baseline (b) data'] = await measure(data, path, ctx, counter);
    }
    await stop(data.child);

    // (a) the same envelopes from memory
    const bodiesFile = join(work, 'bodies.json');
    writeFileSync(bodiesFile, JSON.stringify(bodies));
    const memory = await start('baseline (a)', 'dist/bench/baseline-memory.js', { BENCH_BODIES: bodiesFile }, logFile);
    for (const path of available) {
      console.log(`bench: baseline (a) ${path.name}`);
      results.get(path.name)!['baseline (a) memory'] = await measure(memory, path, ctx, counter);
    }
    await stop(memory.child);

    report(engine, available, results, Date.now() - started);
    reportMetricsCost(available, results, scrape);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** One scrape at the end of the metered run: proof the metrics were on, and what a scrape holds. */
async function metricsSummary(url: string): Promise<{ series: number; requests: number; bytes: number }> {
  const text = await (await fetch(url)).text();
  const samples = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
  const requests = samples.filter((line) => line.startsWith('http_requests_total{')).reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return { series: samples.length, requests, bytes: Buffer.byteLength(text) };
}

/** The same build with metrics off (the default) and on, path by path. */
function reportMetricsCost(paths: BenchPath[], results: Map<string, Partial<Record<Target, Measure>>>, scrape: { series: number; requests: number; bytes: number }): void {
  console.log('\nmetrics (issue 12): the same build with METRICS_PORT unset (off) and set (on), run one after the other\n');
  console.log('| path | req/s off | req/s on | on / off | p99 off / on (ms) | CPU µs/req off | CPU µs/req on | CPU on / off |');
  console.log('|---|---|---|---|---|---|---|---|');
  const fmt = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? '–' : n >= 100 ? n.toFixed(0) : n.toFixed(1));
  for (const path of paths) {
    const off = results.get(path.name)!.service!;
    const on = results.get(path.name)!['service, metrics on'];
    if (!on) continue;
    console.log(
      `| ${path.name} | ${fmt(off.rps)} | ${fmt(on.rps)} | ${(on.rps / off.rps).toFixed(2)} | ${fmt(off.p99)} / ${fmt(on.p99)} | ${fmt(off.cpuUs)} | ${fmt(on.cpuUs)} | ${(on.cpuUs / off.cpuUs).toFixed(2)} |`,
    );
  }
  console.log(`\none scrape after the metered run: ${scrape.series} series, ${(scrape.bytes / 1024).toFixed(0)} KiB, http_requests_total summed ${scrape.requests}`);
}

function report(engine: string, paths: BenchPath[], results: Map<string, Partial<Record<Target, Measure>>>, elapsedMs: number): void {
  const cores = cpus();
  console.log(`\n## ${engine === 'postgres' ? 'PostgreSQL server (DATABASE_URL)' : 'embedded PGlite'}: ${AGENTS} agents, ${CONVERSATIONS} conversations`);
  console.log(`machine: ${cores.length} × ${cores[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}; load average before the report ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`req/s: 50 connections for ${SECONDS} s; latency: one request every ${1000 / RATE} ms (open loop, timed from when it was due) for ${SECONDS} s (ms); CPU: the server process's user + system time per request in that phase (µs)\n`);
  console.log('| path | service req/s | (b) data req/s | (a) memory req/s | service / (b) | service / (a) | service p50 | service p99 | (b) p50 / p99 | (a) p50 / p99 | CPU µs/req service / (b) / (a) | non-2xx |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  const fmt = (n: number | undefined) => (n === undefined ? '–' : n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const cpu = (us: number | undefined) => (us === undefined || Number.isNaN(us) ? '–' : us.toFixed(0));
  for (const path of paths) {
    const r = results.get(path.name)!;
    const s = r.service!;
    const b = r['baseline (b) data'];
    const a = r['baseline (a) memory'];
    console.log(
      `| ${path.name} | ${fmt(s.rps)} | ${fmt(b?.rps)} | ${fmt(a?.rps)} | ${b ? (s.rps / b.rps).toFixed(2) : '–'} | ${a ? (s.rps / a.rps).toFixed(2) : '–'} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(b?.p50)} / ${fmt(b?.p99)} | ${fmt(a?.p50)} / ${fmt(a?.p99)} | ${cpu(s.cpuUs)} / ${cpu(b?.cpuUs)} / ${cpu(a?.cpuUs)} | ${s.non2xx + s.errors} |`,
    );
  }
  console.log('\ntargets (issue 7):');
  for (const path of paths) {
    const r = results.get(path.name)!;
    const s = r.service!;
    if (path.name === 'GET /agents/{id}' && r['baseline (b) data']) {
      const ratio = s.rps / r['baseline (b) data']!.rps;
      console.log(`  ${path.name} ≥ 0.5 of baseline (b): ${ratio.toFixed(2)} ${ratio >= 0.5 ? 'met' : 'NOT met'}`);
    }
    if (path.kind === 'point') console.log(`  ${path.name} p99 ≤ 10 ms at ${RATE} req/s: ${s.p99.toFixed(1)} ms ${s.p99 <= 10 ? 'met' : 'NOT met'}`);
    if (path.kind === 'filtered') console.log(`  ${path.name} p50 ≤ 20 ms: ${s.p50.toFixed(1)} ms ${s.p50 <= 20 ? 'met' : 'NOT met'}`);
  }
  const skipped = BENCH_PATHS.filter((p) => !paths.includes(p)).map((p) => p.name);
  if (skipped.length) console.log(`  not measured (no such endpoint on this build): ${skipped.join(', ')}`);
  console.log(`\nbench: done in ${(elapsedMs / 1000).toFixed(0)} s`);
}

main().catch((error: Error) => {
  console.error(`bench failed: ${error.message}`);
  process.exit(1);
});
