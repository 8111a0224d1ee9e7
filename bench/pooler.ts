import autocannon, { type Result } from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { BENCH_PATHS, type BenchContext, type BenchPath } from './routes';
import { AGENTS, CONVERSATIONS, seed } from './seed';
import { freePort } from '../libs/net/free-port';
import { loadAverage } from './support';

/**
 * `npm run bench:pooler`: many instances, one database, a pooler.
 *
 * 1. A/B of DATABASE_POOLER on one instance talking to the server directly,
 *    rounds alternating: CPU per request of the instance and of the server's
 *    backends, with every statement named (none) and unnamed (transaction).
 * 2. BENCH_INSTANCES (8) built servers with DB_POOL_MAX=BENCH_POOL_MAX (10)
 *    and DATABASE_POOLER=transaction behind one PgBouncer in transaction mode
 *    with BENCH_POOLER_SIZE (20) server connections, each path loaded on every
 *    instance at once (BENCH_CONNECTIONS, 16, per instance), then all paths
 *    mixed: requests, errors, server connections seen, CPU per request.
 *
 * A throw-away cluster (scripts/pg-test-cluster.sh) and PgBouncer
 * (scripts/pgbouncer-test.sh); the load average is printed beside each part.
 * BENCH_SECONDS (5) per measurement, BENCH_ROUNDS (2) A/B rounds.
 */
const ROOT = join(__dirname, '..', '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2));
const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 8);
const POOL_MAX = Number(process.env.BENCH_POOL_MAX ?? 10);
const POOLER_SIZE = Number(process.env.BENCH_POOLER_SIZE ?? 20);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** BENCH_AB=off skips part 1 */
const AB = process.env.BENCH_AB !== 'off';

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process in µs (Linux /proc); 0 when it is gone. */
function cpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** utime + stime + cutime + cstime: a process and its children that have exited (the postmaster reaps its backends). */
function cpuWithReapedUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1e6) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** The server's processes: the postmaster, its live children and those that exited (backends come and go with the pools). */
function serverCpuUs(postmaster: number): number {
  let total = cpuWithReapedUs(postmaster);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) total += cpuUs(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return total;
}

function vars(out: string): Record<string, string> {
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
}

interface Instance {
  child: ChildProcess;
  base: string;
}

async function startInstance(env: Record<string, string>, logFile: string): Promise<Instance> {
  const port = await freePort();
  const out = openSync(logFile, 'a');
  const child = spawn(process.execPath, ['dist/src/main.js'], { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', out, out] });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`instance exited with ${child.exitCode}; see ${logFile}`);
    try {
      const res = await fetch(`${base}/api/v1/`);
      await res.arrayBuffer();
      if (res.status < 500) return { child, base };
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`instance did not start; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function stopInstance({ child }: Instance): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

function hammer(base: string, paths: BenchPath[], ctx: BenchContext, connections: number, seconds: number, counter: { n: number }): Promise<Result> {
  return autocannon({
    url: base,
    connections,
    duration: seconds,
    headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (req) => {
          counter.n += 1;
          const path = paths[counter.n % paths.length];
          return { ...req, method: path.method, path: path.path(ctx, counter.n), body: path.body?.(ctx, counter.n) };
        },
      },
    ],
  });
}

interface Load {
  requests: number;
  rps: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** CPU µs per request: the instances, the server, the pooler */
  instanceCpu: number;
  serverCpu: number;
  poolerCpu: number;
}

/** Loads every instance at once with `paths` (round-robin per request), for `seconds`. */
async function loadAll(instances: Instance[], paths: BenchPath[], ctx: BenchContext, counter: { n: number }, pids: { postmaster: number; pooler: number | null }, connections = CONNECTIONS, seconds = SECONDS): Promise<Load> {
  const instanceBefore = instances.map((i) => cpuUs(i.child.pid!));
  const serverBefore = serverCpuUs(pids.postmaster);
  const poolerBefore = pids.pooler ? cpuUs(pids.pooler) : 0;
  const results = await Promise.all(instances.map((i) => hammer(i.base, paths, ctx, connections, seconds, counter)));
  const requests = results.reduce((n, r) => n + r.requests.total, 0);
  const instanceCpu = instances.reduce((n, i, k) => n + cpuUs(i.child.pid!) - instanceBefore[k], 0);
  return {
    requests,
    rps: results.reduce((n, r) => n + r.requests.average, 0),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    non2xx: results.reduce((n, r) => n + r.non2xx, 0),
    errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
    instanceCpu: instanceCpu / requests,
    serverCpu: (serverCpuUs(pids.postmaster) - serverBefore) / requests,
    poolerCpu: pids.pooler ? (cpuUs(pids.pooler) - poolerBefore) / requests : NaN,
  };
}

const f0 = (n: number) => (Number.isNaN(n) ? '–' : n.toFixed(0));

async function main(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'src', 'main.js'))) throw new Error('dist/src/main.js missing: npm run build');
  const work = mkdtempSync(join(tmpdir(), 'agent-platform-bench-pooler-'));
  const logFile = join(work, 'instances.log');
  const manyLog = join(work, 'many-instances.log');
  const cluster = vars(execFileSync('bash', [join(ROOT, 'scripts', 'pg-test-cluster.sh'), 'start'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
  let bouncer: Record<string, string> | null = null;
  const running: Instance[] = [];
  try {
    const postmaster = Number(readFileSync(join(cluster.PG_TEST_DIR, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    console.log(`bench:pooler: ${cpus().length} cores, node ${process.version}; seeding ${AGENTS} agents and ${CONVERSATIONS} conversations (load average ${loadAverage()})`);
    const seeded = await seed({ databaseUrl: cluster.DATABASE_URL });
    const ctx: BenchContext = { ...seeded, runTag: randomBytes(3).toString('hex').replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)]) };
    const counter = { n: 0 };
    const base = {
      CURSOR_SECRET: 'bench-cursor-secret-0123456789',
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '1000000',
      RATE_LIMIT_PER_HOUR: '100000000',
      TRASH_PURGE_CRON: 'off',
      IDEMPOTENCY_PURGE_CRON: 'off',
    };

    // 1. the setting's cost: one instance, straight to the server, A/B alternating
    console.log(`\n## DATABASE_POOLER=none vs transaction: one instance, DB_POOL_MAX=${POOL_MAX}, straight to the server, 50 connections, ${SECONDS} s per path, ${ROUNDS} alternating rounds (median)\n`);
    const ab = new Map<string, Record<'none' | 'transaction', Load[]>>(BENCH_PATHS.map((p) => [p.name, { none: [], transaction: [] }]));
    const abLoads: string[] = [];
    for (let round = 0; round < (AB ? ROUNDS : 0); round++) {
      for (const mode of (round % 2 ? ['transaction', 'none'] : ['none', 'transaction']) as Array<'none' | 'transaction'>) {
        abLoads.push(loadAverage());
        const instance = await startInstance({ ...base, DATABASE_URL: cluster.DATABASE_URL, DB_POOL_MAX: String(POOL_MAX), DATABASE_POOLER: mode }, logFile);
        running.push(instance);
        for (const path of BENCH_PATHS) {
          await loadAll([instance], [path], ctx, counter, { postmaster, pooler: null }, 10, 1); // warm-up
          ab.get(path.name)![mode].push(await loadAll([instance], [path], ctx, counter, { postmaster, pooler: null }, 50));
        }
        await stopInstance(running.pop()!);
      }
    }
    const median = (list: number[]) => {
      const s = [...list].sort((x, y) => x - y);
      return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    };
    if (AB) console.log('| path | req/s none | req/s transaction | CPU µs/req instance none / transaction | ratio | CPU µs/req server none / transaction | ratio | errors |');
    if (AB) console.log('|---|---|---|---|---|---|---|---|');
    for (const [name, { none, transaction }] of AB ? ab : []) {
      const m = (list: Load[], pick: (l: Load) => number) => median(list.map(pick));
      const iN = m(none, (l) => l.instanceCpu);
      const iT = m(transaction, (l) => l.instanceCpu);
      const sN = m(none, (l) => l.serverCpu);
      const sT = m(transaction, (l) => l.serverCpu);
      const errors = [...none, ...transaction].reduce((n, l) => n + l.non2xx + l.errors, 0);
      console.log(`| ${name} | ${f0(m(none, (l) => l.rps))} | ${f0(m(transaction, (l) => l.rps))} | ${f0(iN)} / ${f0(iT)} | ${(iT / iN).toFixed(2)} | ${f0(sN)} / ${f0(sT)} | ${(sT / sN).toFixed(2)} | ${errors} |`);
    }
    console.log(`\nload average (1, 5, 15 min) at the start of each run: ${abLoads.join(' | ')}`);

    // 2. many instances, one pooler
    bouncer = vars(
      execFileSync('bash', [join(ROOT, 'scripts', 'pgbouncer-test.sh'), 'start', cluster.DATABASE_URL], {
        encoding: 'utf8',
        env: { ...process.env, PGBOUNCER_POOL_SIZE: String(POOLER_SIZE) },
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
    const pooler = Number(readFileSync(join(bouncer.PGBOUNCER_DIR, 'pgbouncer.pid'), 'utf8').trim());
    console.log(`\n## ${INSTANCES} instances (DB_POOL_MAX=${POOL_MAX}, DATABASE_POOLER=transaction) behind PgBouncer (transaction mode, ${POOLER_SIZE} server connections); ${CONNECTIONS} connections per instance, ${SECONDS} s per path (load average ${loadAverage()})\n`);
    // behind a transaction pooler the server-side statement timeout is the database's (or role's) setting, as
    // docs/scaling.md says: without it a statement whose client gave up keeps its backend busy after the pooler has
    // replaced that server connection
    const setup = new Client({ connectionString: cluster.DATABASE_URL });
    await setup.connect();
    await setup.query(`alter database app set statement_timeout = 5000`);
    await setup.end();
    // started together: they migrate at once, through the pooler, under the migration lock
    running.push(...(await Promise.all(Array.from({ length: INSTANCES }, () => startInstance({ ...base, DATABASE_URL: bouncer!.DATABASE_URL, DB_POOL_MAX: String(POOL_MAX), DATABASE_POOLER: 'transaction' }, manyLog)))));
    const admin = new Client({ connectionString: cluster.DATABASE_URL });
    await admin.connect();
    let peakServerConnections = 0;
    const watcher = setInterval(() => {
      admin
        .query<{ count: number }>(`select count(*)::int as count from pg_stat_activity where datname = 'app' and backend_type = 'client backend' and pid <> pg_backend_pid()`)
        .then((r) => (peakServerConnections = Math.max(peakServerConnections, r.rows[0].count)))
        .catch(() => undefined);
    }, 200);
    console.log('| path | req/s (all instances) | p99 ms (worst instance) | non-2xx | errors | CPU µs/req instances / server / pooler | load average |');
    console.log('|---|---|---|---|---|---|---|');
    let failures = 0;
    const phases: Array<[string, BenchPath[]]> = [...BENCH_PATHS.map((p) => [p.name, [p]] as [string, BenchPath[]]), [`all ${BENCH_PATHS.length}, mixed`, BENCH_PATHS]];
    for (const [name, paths] of phases) {
      const warm = await loadAll(running, paths, ctx, counter, { postmaster, pooler }, 2, 1); // warm-up: its failures count too
      failures += warm.non2xx + warm.errors;
      const at = loadAverage();
      const l = await loadAll(running, paths, ctx, counter, { postmaster, pooler });
      failures += l.non2xx + l.errors;
      console.log(`| ${name} | ${f0(l.rps)} | ${f0(l.p99)} | ${l.non2xx} | ${l.errors} | ${f0(l.instanceCpu)} / ${f0(l.serverCpu)} / ${f0(l.poolerCpu)} | ${at} |`);
    }
    clearInterval(watcher);
    await admin.end();
    // while the instances run: a line logged at shutdown is not the load's
    const errorLines = readFileSync(manyLog, 'utf8')
      .split('\n')
      .filter((line) => /"level":"(warn|error|fatal)"/.test(line));
    const logged = errorLines.length;
    for (const line of [...new Set(errorLines.map((l) => l.replace(/"(time|request_id|pid)":[^,]*,/g, '')))].slice(0, 3)) console.log(`  ${line.slice(0, 400)}`);
    console.log(`\nserver connections seen on the database (peak, sampled every 200 ms): ${peakServerConnections} (pooler limit ${POOLER_SIZE}; without it ${INSTANCES} × ${POOL_MAX} = ${INSTANCES * POOL_MAX})`);
    console.log(`failed requests (non-2xx + errors): ${failures}; error lines in the instances' logs: ${logged}`);
    if (failures > 0 || logged > 0) process.exitCode = 1;
  } finally {
    await Promise.all(running.map(stopInstance));
    if (bouncer) execFileSync('bash', [join(ROOT, 'scripts', 'pgbouncer-test.sh'), 'stop', bouncer.PGBOUNCER_DIR], { stdio: 'inherit' });
    execFileSync('bash', [join(ROOT, 'scripts', 'pg-test-cluster.sh'), 'stop', cluster.PG_TEST_DIR], { stdio: 'inherit' });
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error: Error) => {
  console.error(`bench:pooler failed: ${error.message}`);
  process.exit(1);
});
