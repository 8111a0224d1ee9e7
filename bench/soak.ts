import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_PATHS, type BenchContext } from './routes';
import { seed } from './seed';
import { freePort } from '../libs/net/free-port';
import { loadAverage } from './support';

/**
 * `npm run bench:soak`: memory of one instance under a long mixed load. One
 * built server on a throw-away PostgreSQL cluster seeded with the bench's
 * dataset, the bench's six paths in turn from 16 clients, paced to SOAK_RATE (200 req/s) at most, for
 * SOAK_SECONDS (600); RSS sampled every 10 s. Reports RSS after the first
 * minute and at the end, and fails (exit 1) when it grew by more than 10 %.
 */
const ROOT = join(__dirname, '..', '..');
const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const RATE = Number(process.env.SOAK_RATE ?? 200);
const SAMPLE_MS = 10_000;
const MAX_GROWTH = 0.1;
const WORKERS = 16;

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

async function main(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'src', 'main.js'))) throw new Error('dist/src/main.js missing: npm run build');
  const work = mkdtempSync(join(tmpdir(), 'agent-platform-soak-'));
  const cluster = Object.fromEntries(
    execFileSync('bash', [join(ROOT, 'scripts', 'pg-test-cluster.sh'), 'start'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
      .trim()
      .split('\n')
      .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
  const port = await freePort();
  let child: ReturnType<typeof spawn> | null = null;
  let keepLog = false;
  try {
    const seeded = await seed({ databaseUrl: cluster.DATABASE_URL });
    const ctx: BenchContext = { ...seeded, runTag: randomBytes(3).toString('hex').replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)]) };
    const out = openSync(join(work, 'server.log'), 'a');
    child = spawn(process.execPath, ['dist/src/main.js'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: cluster.DATABASE_URL,
        CURSOR_SECRET: 'soak-cursor-secret-0123456789',
        ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'info',
        RATE_LIMIT_PER_MINUTE: '1000000',
        RATE_LIMIT_PER_HOUR: '100000000',
      },
      stdio: ['ignore', out, out],
    });
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
      const ready = await fetch(`${base}/api/v1/`).then(
        (r) => r.status < 500,
        () => false,
      );
      if (ready) break;
      if (i > 600) throw new Error('server did not start');
      await new Promise((r) => setTimeout(r, 200));
    }
    const pid = child.pid!;
    console.log(`bench:soak: one instance, the six bench paths in turn at ${RATE} req/s for ${SECONDS} s; RSS at start ${rssMiB(pid).toFixed(0)} MiB (load average ${loadAverage()})`);
    const samples: Array<{ at: number; rss: number; load: string }> = [];
    const started = Date.now();
    const timer = setInterval(() => {
      samples.push({ at: (Date.now() - started) / 1000, rss: rssMiB(pid), load: loadAverage() });
      const last = samples.at(-1)!;
      console.log(`  ${last.at.toFixed(0).padStart(4)} s  RSS ${last.rss.toFixed(0)} MiB  load ${last.load}`);
    }, SAMPLE_MS);
    // WORKERS clients, each sending one request at a time, paced so that together they send RATE per second
    let n = 0;
    const result = { requests: 0, non2xx: 0, errors: 0 };
    const until = Date.now() + SECONDS * 1000;
    const interval = (WORKERS * 1000) / RATE;
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, worker) => {
        let due = Date.now() + (worker * interval) / WORKERS;
        while (Date.now() < until) {
          const wait = due - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          due += interval;
          n += 1;
          const path = BENCH_PATHS[n % BENCH_PATHS.length];
          try {
            const res = await fetch(base + path.path(ctx, n), {
              method: path.method,
              headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/json' },
              body: path.body?.(ctx, n),
              signal: AbortSignal.timeout(10_000),
            });
            await res.arrayBuffer();
            result.requests += 1;
            if (res.status >= 300) result.non2xx += 1;
          } catch {
            result.errors += 1;
          }
        }
      }),
    );
    clearInterval(timer);
    const end = rssMiB(pid);
    const firstMinute = samples.find((s) => s.at >= 60) ?? samples[0];
    const growth = (end - firstMinute.rss) / firstMinute.rss;
    console.log(
      `\nrequests ${result.requests} (${(result.requests / SECONDS).toFixed(0)}/s; non-2xx ${result.non2xx}, errors ${result.errors}); RSS after ${firstMinute.at.toFixed(0)} s ${firstMinute.rss.toFixed(0)} MiB, ` +
        `at the end (${SECONDS} s) ${end.toFixed(0)} MiB: growth ${(growth * 100).toFixed(1)} % (limit ${MAX_GROWTH * 100} %); peak ${Math.max(...samples.map((s) => s.rss), end).toFixed(0)} MiB; load average ${loadAverage()}`,
    );
    if (growth > MAX_GROWTH || result.errors + result.non2xx > 0) {
      process.exitCode = 1;
      keepLog = true;
    }
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    execFileSync('bash', [join(ROOT, 'scripts', 'pg-test-cluster.sh'), 'stop', cluster.PG_TEST_DIR], { stdio: 'inherit' });
    if (keepLog) console.log(`the server's log: ${join(work, 'server.log')}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error: Error) => {
  console.error(`bench:soak failed: ${error.message}`);
  process.exit(1);
});
