import autocannon, { type Result } from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_PATHS, type BenchContext, type BenchPath } from './routes';
import { AGENTS, CONVERSATIONS, seed } from './seed';
import { freePort } from '../libs/net/free-port';
import { loadAverage } from './support';

/**
 * `npm run bench`: seeds the volume dataset, starts the BUILT server and three
 * baselines one after the other on the same database, and prints req/s at 50
 * connections and p50/p99 at a fixed rate (BENCH_RATE, default 200 req/s) for
 * each main path, with the ratios to the baselines. Embedded PGlite by default; DATABASE_URL when set.
 * BENCH_ROUNDS=n repeats the service and baselines (b), (c) n times,
 * interleaved, and reports the median of each figure; BENCH_PROFILE=dir runs
 * the service under `node --cpu-prof` into dir, baseline (c) into dir/c
 * (bench/profile-summary.ts reads them); BENCH_SERVERS=service,metrics,b,c,a
 * picks which servers run
 * (metrics: the same build with METRICS_PORT set; cp, not in the
 * default: baseline (c) with the service's pipeline skeleton doing nothing) and
 * BENCH_ONLY=<part of a path name> (or =<the name>) which paths; BENCH_SERVICE=<main.js of
 * another build> benches that build as the service, and BENCH_BEFORE=<main.js of an
 * earlier build> benches it beside the service in every round (before/after),
 * with CPU per request both at 50 connections and at the fixed rate.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
const SERVERS = new Set((process.env.BENCH_SERVERS ?? 'service,metrics,b,c,a').split(',').map((s) => s.trim()));
const PROFILE_DIR = process.env.BENCH_PROFILE?.trim() || '';
/** BENCH_SERVICE=<another build's dist/src/main.js>: measure that build as "the service" (before/after comparisons) */
const SERVICE_SCRIPT = process.env.BENCH_SERVICE?.trim() || 'dist/src/main.js';
/** BENCH_BEFORE=<an earlier build's dist/src/main.js>: benched beside the service in every round, on the same database (a change's cost, measured in the same minutes) */
const BEFORE_SCRIPT = process.env.BENCH_BEFORE?.trim() || '';
/** BENCH_ONLY='PATCH' measures only the paths whose name contains it; BENCH_ONLY='=GET /agents' only the path of that name; commas separate several */
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').map((part) => part.trim());
const selected = (path: BenchPath) => ONLY.some((only) => (only.startsWith('=') ? path.name === only.slice(1) : path.name.includes(only)));
/** the fixed rate of the latency phase, req/s (BENCH_RATE; the latency targets are stated at 200) */
const RATE = Number(process.env.BENCH_RATE ?? 200);
const ROOT = join(__dirname, '..', '..');

interface Measure {
  rps: number;
  p50: number;
  p99: number;
  /** process CPU (user + system, every thread) per request at 50 connections, µs; NaN where /proc is missing */
  cpuUs: number;
  /** the same at the fixed rate of the latency phase: every build gets the same arrivals, so batching differs less */
  pacedCpuUs: number;
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

type Target = 'service' | 'service, before' | 'service, metrics on' | 'baseline (a) memory' | 'baseline (b) data' | 'baseline (c) nest' | 'baseline (c) nest, empty pipeline';

async function start(name: string, script: string, env: Record<string, string>, logFile: string, nodeArgs: string[] = []): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const out = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...nodeArgs, script], { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', out, out] });
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
async function paced(base: string, path: BenchPath, ctx: BenchContext, rate: number, seconds: number, counter: { n: number }): Promise<Omit<Measure, 'rps' | 'cpuUs' | 'pacedCpuUs'>> {
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
  const cpuBefore = cpuTimeUs(server.child.pid);
  const load = await run(base, path, ctx, { connections: 50, duration: SECONDS }, counter);
  const cpuUs = (cpuTimeUs(server.child.pid) - cpuBefore) / load.requests.total;
  const pacedCpuBefore = cpuTimeUs(server.child.pid);
  const fixed = await paced(base, path, ctx, RATE, SECONDS, counter);
  const pacedCpuUs = (cpuTimeUs(server.child.pid) - pacedCpuBefore) / Math.round(RATE * SECONDS);
  return {
    rps: load.requests.average,
    p50: fixed.p50,
    p99: fixed.p99,
    cpuUs,
    pacedCpuUs,
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

    const serviceEnv = { ...dbEnv, ...secrets, HOST: '127.0.0.1', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_PER_HOUR: '100000000', TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' };
    // the service's profiles in dir, baseline (c)'s in dir/c: the same summary reads both, so the difference is the pipeline's
    const PROFILED: Partial<Record<Target, string>> = PROFILE_DIR ? { service: PROFILE_DIR, 'baseline (c) nest': join(PROFILE_DIR, 'c') } : {};
    const profileArgs = (target: Target) => (PROFILED[target] ? ['--cpu-prof', `--cpu-prof-dir=${PROFILED[target]}`] : []);
    const serviceArgs = profileArgs('service');
    // which paths this build serves (the service, as users run it: default log level, one line per request)
    const available: BenchPath[] = [];
    const bodies: Array<{ method: string; pattern: string; status: number; data: unknown }> = [];
    {
      const probe = await start('service', SERVICE_SCRIPT, serviceEnv, logFile);
      for (const path of BENCH_PATHS.filter(selected)) {
        const res = await fetch(probe.base + path.path(ctx, 0), {
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
      await stop(probe.child);
    }
    const rounds = new Map<string, Partial<Record<Target, Measure[]>>>(available.map((p) => [p.name, {}]));
    const loads: string[] = [];
    let scrape: ScrapeSummary | null = null;
    async function bench(target: Target, server: { base: string; child: ChildProcess }, beforeStop?: () => Promise<void>): Promise<void> {
      const from = counter.n;
      for (const path of available) {
        console.log(`bench: ${target} ${path.name}`);
        const got = rounds.get(path.name)!;
        (got[target] ??= []).push(await measure(server, path, ctx, counter));
      }
      await beforeStop?.();
      await stop(server.child);
      // the requests the profiled service answered, for profile-summary's µs per request
      const profiled = PROFILE_DIR && PROFILED[target];
      if (profiled) {
        const counted = join(profiled, 'requests.txt');
        writeFileSync(counted, String(counter.n - from + Number(existsSync(counted) ? readFileSync(counted, 'utf8') : 0)));
      }
    }
    // servers one after the other (PGlite allows one process per directory),
    // rounds interleaved so that a noisy minute hits every server alike, and
    // each round starts one server later than the one before, so that no
    // server is always the one that runs first (right after the seed, or
    // after the previous round's last server)
    const servers: Array<() => Promise<void>> = [];
    if (SERVERS.has('service')) servers.push(async () => bench('service', await start('service', SERVICE_SCRIPT, serviceEnv, logFile, serviceArgs)));
    if (BEFORE_SCRIPT) servers.push(async () => bench('service, before', await start('service, before', BEFORE_SCRIPT, serviceEnv, logFile)));
    if (SERVERS.has('metrics')) {
      servers.push(async () => {
        const metricsPort = await freePort();
        const metered = await start('service, metrics on', SERVICE_SCRIPT, { ...serviceEnv, METRICS_PORT: String(metricsPort) }, logFile);
        // one scrape before it stops: proof the metrics were on, and what a scrape holds
        await bench('service, metrics on', metered, async () => {
          scrape = await metricsSummary(`http://127.0.0.1:${metricsPort}/metrics`);
        });
      });
    }
    if (SERVERS.has('b')) servers.push(async () => bench('baseline (b) data', await start('baseline (b)', 'dist/bench/baseline-data.js', dbEnv, logFile)));
    if (SERVERS.has('c')) servers.push(async () => bench('baseline (c) nest', await start('baseline (c)', 'dist/bench/baseline-nest.js', dbEnv, logFile, profileArgs('baseline (c) nest'))));
    if (SERVERS.has('cp')) servers.push(async () => bench('baseline (c) nest, empty pipeline', await start('baseline (c), empty pipeline', 'dist/bench/baseline-nest.js', { ...dbEnv, BENCH_C_PIPELINE: '1' }, logFile)));
    for (let round = 1; round <= ROUNDS; round++) {
      loads.push(loadAverage());
      if (ROUNDS > 1) console.log(`bench: round ${round} of ${ROUNDS}, load average ${loads.at(-1)}`);
      for (let i = 0; i < servers.length; i++) await servers[(round - 1 + i) % servers.length]();
    }
    // (a) the same envelopes from memory: once, it measures the load generator more than anything
    if (SERVERS.has('a')) {
      const bodiesFile = join(work, 'bodies.json');
      writeFileSync(bodiesFile, JSON.stringify(bodies));
      await bench('baseline (a) memory', await start('baseline (a)', 'dist/bench/baseline-memory.js', { BENCH_BODIES: bodiesFile }, logFile));
    }
    loads.push(loadAverage());
    const results = new Map<string, Partial<Record<Target, Measure>>>();
    for (const [name, got] of rounds) {
      results.set(name, Object.fromEntries(Object.entries(got).map(([target, list]) => [target, median(list!)])) as Partial<Record<Target, Measure>>);
    }
    console.log(`bench: load average (1, 5, 15 min) at the start of each round and at the end: ${loads.join(' | ')}`);
    report(engine, available, results, Date.now() - started);
    if (scrape) reportMetricsCost(available, results, scrape);
    if (SERVERS.has('cp')) reportPipelineSkeleton(available, results);
    if (BEFORE_SCRIPT) reportBeforeAfter(available, results, rounds);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** One scrape at the end of the metered run: proof the metrics were on, and what a scrape holds. */
interface ScrapeSummary {
  series: number;
  requests: number;
  bytes: number;
}

async function metricsSummary(url: string): Promise<ScrapeSummary> {
  const text = await (await fetch(url)).text();
  const samples = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
  const requests = samples.filter((line) => line.startsWith('http_requests_total{')).reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return { series: samples.length, requests, bytes: Buffer.byteLength(text) };
}

/** The same build with metrics off (the default) and on, path by path. */
function reportMetricsCost(paths: BenchPath[], results: Map<string, Partial<Record<Target, Measure>>>, scrape: ScrapeSummary): void {
  console.log('\nmetrics: the same build with METRICS_PORT unset (off) and set (on), run one after the other\n');
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

/** The earlier build (BENCH_BEFORE) beside this one, path by path. */
function reportBeforeAfter(
  paths: BenchPath[],
  results: Map<string, Partial<Record<Target, Measure>>>,
  rounds: Map<string, Partial<Record<Target, Measure[]>>>,
): void {
  console.log(`\nthis build against the earlier one (BENCH_BEFORE=${BEFORE_SCRIPT}), interleaved in every round\n`);
  // each round's own ratio beside the medians: how far one round strays is the noise a ratio is read against
  console.log(`| path | req/s before | req/s after | after / before | CPU µs/req before | CPU µs/req after | CPU after / before | each round | CPU µs/req at ${RATE} req/s before / after | after / before | each round | p50 / p99 at ${RATE} req/s before, after (ms) |`);
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const path of paths) {
    const after = results.get(path.name)!.service;
    const before = results.get(path.name)!['service, before'];
    if (!after || !before) continue;
    const got = rounds.get(path.name)!;
    const each = (pick: (m: Measure) => number) => (got.service ?? []).map((m, i) => (pick(m) / pick(got['service, before']![i])).toFixed(2)).join(', ');
    console.log(
      `| ${path.name} | ${before.rps.toFixed(0)} | ${after.rps.toFixed(0)} | ${(after.rps / before.rps).toFixed(2)} | ${before.cpuUs.toFixed(0)} | ${after.cpuUs.toFixed(0)} | ${(after.cpuUs / before.cpuUs).toFixed(2)} | ${each((m) => m.cpuUs)} | ${before.pacedCpuUs.toFixed(0)} / ${after.pacedCpuUs.toFixed(0)} | ${(after.pacedCpuUs / before.pacedCpuUs).toFixed(2)} | ${each((m) => m.pacedCpuUs)} | ${before.p50.toFixed(1)} / ${before.p99.toFixed(1)}, ${after.p50.toFixed(1)} / ${after.p99.toFixed(1)} |`,
    );
  }
}

/** Baseline (c) beside (c) with the pipeline's skeleton doing nothing: what the design's pipeline costs by itself. */
function reportPipelineSkeleton(paths: BenchPath[], results: Map<string, Partial<Record<Target, Measure>>>): void {
  console.log('\nbaseline (c) with the service\'s pipeline skeleton, each part doing nothing (AsyncLocalStorage scope, four guards, a pipe, two interceptors, an onSend hook):\n');
  // CPU at the fixed rate too: at 50 connections a faster server batches more requests per
  // event-loop turn and wakes its peers less often, so there (c) looks cheaper than at equal arrivals
  console.log(`| path | (c) req/s | (c) + empty pipeline req/s | empty pipeline / (c) | service / (c + empty pipeline) | CPU µs/req (c) / (c + empty pipeline) / service | the same at ${RATE} req/s | service / (c) in CPU at ${RATE} req/s |`);
  console.log('|---|---|---|---|---|---|---|---|');
  const us = (m: Measure | undefined, pick: (m: Measure) => number) => (m === undefined || Number.isNaN(pick(m)) ? '–' : pick(m).toFixed(0));
  const cpu = (m: Measure | undefined) => us(m, (x) => x.cpuUs);
  const paced = (m: Measure | undefined) => us(m, (x) => x.pacedCpuUs);
  for (const path of paths) {
    const r = results.get(path.name)!;
    const c = r['baseline (c) nest'];
    const cp = r['baseline (c) nest, empty pipeline'];
    const s = r.service;
    if (!cp) continue;
    console.log(
      `| ${path.name} | ${c?.rps.toFixed(0) ?? '–'} | ${cp.rps.toFixed(0)} | ${c ? (cp.rps / c.rps).toFixed(2) : '–'} | ${s ? (s.rps / cp.rps).toFixed(2) : '–'} | ${cpu(c)} / ${cpu(cp)} / ${cpu(s)} | ${paced(c)} / ${paced(cp)} / ${paced(s)} | ${c && s ? (s.pacedCpuUs / c.pacedCpuUs).toFixed(2) : '–'} |`,
    );
  }
}

/** The median of each figure over the rounds (each figure on its own). */
function median(list: Measure[]): Measure {
  const mid = (pick: (m: Measure) => number) => {
    const sorted = list.map(pick).sort((x, y) => x - y);
    return sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  };
  return {
    rps: mid((m) => m.rps),
    p50: mid((m) => m.p50),
    p99: mid((m) => m.p99),
    cpuUs: mid((m) => m.cpuUs),
    pacedCpuUs: mid((m) => m.pacedCpuUs),
    non2xx: list.reduce((n, m) => n + m.non2xx, 0),
    errors: list.reduce((n, m) => n + m.errors, 0),
  };
}

function report(engine: string, paths: BenchPath[], results: Map<string, Partial<Record<Target, Measure>>>, elapsedMs: number): void {
  const cores = cpus();
  console.log(`\n## ${engine === 'postgres' ? 'PostgreSQL server (DATABASE_URL)' : 'embedded PGlite'}: ${AGENTS} agents, ${CONVERSATIONS} conversations`);
  console.log(`machine: ${cores.length} × ${cores[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}; load average before the report ${loadAverage()}`);
  console.log(
    `req/s: 50 connections for ${SECONDS} s; latency: one request every ${1000 / RATE} ms (open loop, timed from when it was due) for ${SECONDS} s (ms); CPU: the server process's user + system time per request at 50 connections (µs); ${ROUNDS > 1 ? `median of ${ROUNDS} interleaved rounds` : 'one round'}\n`,
  );
  console.log('| path | service req/s | (c) nest req/s | (b) data req/s | (a) memory req/s | service / (c) | service / (b) | service p50 / p99 | (c) p50 / p99 | (b) p50 / p99 | CPU µs/req service / (c) / (b) | non-2xx |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  const fmt = (n: number | undefined) => (n === undefined ? '–' : n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const cpu = (us: number | undefined) => (us === undefined || Number.isNaN(us) ? '–' : us.toFixed(0));
  const ratio = (s: Measure | undefined, base: Measure | undefined) => (s && base ? s.rps / base.rps : undefined);
  for (const path of paths) {
    const r = results.get(path.name)!;
    const s = r.service;
    const c = r['baseline (c) nest'];
    const b = r['baseline (b) data'];
    const a = r['baseline (a) memory'];
    const rc = ratio(s, c);
    const rb = ratio(s, b);
    console.log(
      `| ${path.name} | ${fmt(s?.rps)} | ${fmt(c?.rps)} | ${fmt(b?.rps)} | ${fmt(a?.rps)} | ${rc?.toFixed(2) ?? '–'} | ${rb?.toFixed(2) ?? '–'} | ${fmt(s?.p50)} / ${fmt(s?.p99)} | ${fmt(c?.p50)} / ${fmt(c?.p99)} | ${fmt(b?.p50)} / ${fmt(b?.p99)} | ${cpu(s?.cpuUs)} / ${cpu(c?.cpuUs)} / ${cpu(b?.cpuUs)} | ${s ? s.non2xx + s.errors : '–'} |`,
    );
  }
  console.log('\ntargets:');
  for (const path of paths) {
    const r = results.get(path.name)!;
    const s = r.service;
    if (!s) continue;
    const rc = ratio(s, r['baseline (c) nest']);
    const rb = ratio(s, r['baseline (b) data']);
    if (rc !== undefined) console.log(`  ${path.name} ≥ 0.6 of baseline (c): ${rc.toFixed(2)} ${rc >= 0.6 ? 'met' : 'NOT met'}`);
    if (rb !== undefined) console.log(`  ${path.name} ≥ 0.6 of baseline (b): ${rb.toFixed(2)} ${rb >= 0.6 ? 'met' : 'NOT met'}`);
    if (path.kind === 'point') console.log(`  ${path.name} p99 ≤ 10 ms at ${RATE} req/s: ${s.p99.toFixed(1)} ms ${s.p99 <= 10 ? 'met' : 'NOT met'}`);
    if (path.kind === 'filtered') console.log(`  ${path.name} p50 ≤ 20 ms: ${s.p50.toFixed(1)} ms ${s.p50 <= 20 ? 'met' : 'NOT met'}`);
  }
  const skipped = BENCH_PATHS.filter((p) => selected(p) && !paths.includes(p)).map((p) => p.name);
  if (skipped.length) console.log(`  not measured (no such endpoint on this build): ${skipped.join(', ')}`);
  console.log(`\nbench: done in ${(elapsedMs / 1000).toFixed(0)} s`);
}

main().catch((error: Error) => {
  console.error(`bench failed: ${error.message}`);
  process.exit(1);
});
