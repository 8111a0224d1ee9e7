import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { loadAverage } from './support';

/**
 * `npm run bench:hostile`: what each pathological input of the
 * pathological-input suite costs a running service, and what it does to
 * everyone else. For each input, one client sends it PER_INPUT times in a
 * row while an ordinary client reads `GET /org` with a valid key in a loop;
 * printed: the service's CPU per hostile request (its /proc utime + stime
 * over the run, less what the ordinary client's requests cost, measured
 * alone first) and the ordinary client's worst and median latency meanwhile,
 * the event-loop delay every tenant on the instance saw.
 *
 * HOSTILE_SERVICES=name=path/to/dist/src/main.js,… benches several builds
 * (default: this one); each runs on an in-memory PGlite with its demo
 * organization, loopback only, and every loop is bounded in count and time.
 */

const ROOT = join(__dirname, '..', '..');
const PER_INPUT = Number(process.env.HOSTILE_PER_INPUT ?? 3);
/** a hostile loop stops after this, whatever its count: the slowest inputs took tens of seconds each before the fixes */
const INPUT_BUDGET_MS = Number(process.env.HOSTILE_BUDGET_MS ?? 20_000);
/** a quarter of the body limit, like the suite: the old costs grew faster than the size */
const SIZE = 256 * 1024;
const BASELINE_MS = 3_000;

interface Input {
  name: string;
  method: 'POST' | 'PATCH';
  /** on the demo agent (PATCH) or the collection (POST) */
  keyed: boolean;
  gzip?: boolean;
  body: () => string;
}

const agentFields = () => `"handle":"h${Math.random().toString(36).slice(2, 10)}","name":"Probe","instructions":"x"`;
const keysText = (count: number) => Array.from({ length: count }, (_v, i) => `"k${i}":0`).join(',');
const padded = (open: string, item: string, close: string, count?: number) => {
  const n = count ?? Math.floor((SIZE - 200) / (item.length + 1));
  return `{${agentFields()},"pending_trigger_hint":${open}${Array(n).fill(item).join(',')}${close}}`;
};

const INPUTS: Input[] = [
  { name: 'million-digit exponent (1e-999…), gzip, no key', method: 'POST', keyed: false, gzip: true, body: () => `{"n":1e-${'9'.repeat(SIZE - 20)}}` },
  { name: 'million-digit exponent (1e-999…), gzip, with a key', method: 'POST', keyed: true, gzip: true, body: () => `{${agentFields()},"pending_trigger_hint":{"n":1e-${'9'.repeat(SIZE - 300)}}}` },
  { name: 'many inexact numbers (1e400), gzip, no key', method: 'POST', keyed: false, gzip: true, body: () => padded('{"n":[', '1e400', ']}') },
  { name: 'many inexact numbers (1e400), gzip, with a key', method: 'POST', keyed: true, gzip: true, body: () => padded('{"n":[', '1e400', ']}') },
  // 30,000 zeros, not a quarter megabyte: the old trim retried at every zero (4 s here, minutes at 256 KiB)
  { name: 'a run of 30,000 zeros in a number (1.000…0001)', method: 'POST', keyed: true, body: () => `{${agentFields()},"pending_trigger_hint":{"n":1.${'0'.repeat(30_000)}1}}` },
  { name: '30,000 keys at the top', method: 'POST', keyed: true, body: () => `{${agentFields()},${keysText(30_000)}}` },
  { name: '30,000 keys in pending_trigger_hint (PATCH)', method: 'PATCH', keyed: true, body: () => `{"pending_trigger_hint":{${keysText(30_000)}}}` },
  { name: 'one key sent 25,000 times', method: 'POST', keyed: true, body: () => padded('{', '"a":1', '}') },
  { name: 'nesting 100,000 levels deep', method: 'POST', keyed: true, body: () => `{${agentFields()},"pending_trigger_hint":{"n":${'['.repeat(100_000)}${']'.repeat(100_000)}}}` },
  { name: 'a third of a million empty objects (at 256 KiB: 85,000)', method: 'POST', keyed: true, body: () => padded('{"n":[', '{}', ']}') },
  { name: 'strings holding U+0000', method: 'POST', keyed: true, body: () => padded('{"n":[', '"\\u0000"', ']}') },
  { name: '1,000 unknown fields', method: 'POST', keyed: true, body: () => `{${agentFields()},${Array.from({ length: 990 }, (_v, i) => `"unknown_field_with_a_long_name_${i}":0`).join(',')}}` },
  { name: 'gzip bomb (64 MiB of spaces)', method: 'POST', keyed: true, gzip: true, body: () => ' '.repeat(64 * 1024 * 1024) },
];

function cpuTimeUs(pid: number | undefined): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime + stime in clock ticks of 10 ms (USER_HZ is 100 on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Answer {
  status: number;
  bytes: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function send(port: number, method: string, path: string, headers: Record<string, string>, payload?: Buffer, timeoutMs = 60_000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: payload ? { ...headers, 'content-length': String(payload.length) } : headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, bytes: body.length, headers: res.headers, body: body.toString() });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timed out')));
    // the server may answer before the body is sent (no key): a reset then is its answer, not an error
    req.on('error', reject);
    if (payload) req.end(payload);
    else req.end();
  });
}

interface Service {
  name: string;
  child: ChildProcess;
  port: number;
  key: string;
  agentPath: string;
}

async function startService(name: string, script: string): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, [script], {
    cwd: ROOT,
    env: { ...process.env, PGLITE_DIR: 'memory', DATABASE_URL: '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_PER_HOUR: '100000000' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const deadline = Date.now() + 120_000;
  for (;;) {
    const match = /curl -H "Authorization: Bearer (svc_live_[A-Za-z0-9_-]+)"/.exec(stderr);
    if (match) {
      const agent = await send(port, 'POST', '/api/v1/agents', { authorization: `Bearer ${match[1]}`, 'content-type': 'application/json' }, Buffer.from(`{${agentFields()}}`));
      if (agent.status !== 201) throw new Error(`${name}: creating the agent answered ${agent.status}`);
      return { name, child, port, key: match[1], agentPath: `/api/v1/agents/${(JSON.parse(agent.body) as { data: { id: string } }).data.id}` };
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${name} did not start:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function stopService(service: Service): Promise<void> {
  if (service.child.exitCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  const timer = setTimeout(() => service.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** GET /org with the key in a loop until `stop` resolves: each request's latency in ms. */
async function ordinaryLoop(service: Service, stopped: () => boolean): Promise<number[]> {
  const latencies: number[] = [];
  while (!stopped()) {
    const started = performance.now();
    // a request the stalled instance never answered counts with the time it waited
    await send(service.port, 'GET', '/api/v1/org', { authorization: `Bearer ${service.key}` }, undefined, 5 * INPUT_BUDGET_MS).catch(() => undefined);
    latencies.push(performance.now() - started);
  }
  return latencies;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? NaN;
};

interface Row {
  input: string;
  service: string;
  status: string;
  answerBytes: number;
  sent: number;
  cpuMsPerRequest: number;
  worstMs: number;
  medianMs: number;
}

async function benchService(service: Service): Promise<Row[]> {
  // the ordinary client alone: its own cost per request, and its latency on a quiet instance
  let done = false;
  const cpuBefore = cpuTimeUs(service.child.pid);
  const timer = setTimeout(() => (done = true), BASELINE_MS);
  const quiet = await ordinaryLoop(service, () => done);
  clearTimeout(timer);
  const ordinaryCpuUs = (cpuTimeUs(service.child.pid) - cpuBefore) / quiet.length;
  const rows: Row[] = [
    { input: '(none: the ordinary client alone)', service: service.name, status: '200', answerBytes: 0, sent: quiet.length, cpuMsPerRequest: ordinaryCpuUs / 1000, worstMs: Math.max(...quiet), medianMs: percentile(quiet, 0.5) },
  ];

  for (const input of INPUTS) {
    const text = input.body();
    const payload = input.gzip ? gzipSync(text) : Buffer.from(text);
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(input.gzip ? { 'content-encoding': 'gzip' } : {}), ...(input.keyed ? { authorization: `Bearer ${service.key}` } : {}) };
    const path = input.method === 'PATCH' ? service.agentPath : '/api/v1/agents';
    let stop = false;
    const startedCpu = cpuTimeUs(service.child.pid);
    const ordinary = ordinaryLoop(service, () => stop);
    const statuses = new Set<string>();
    let answerBytes = 0;
    let sent = 0;
    const started = Date.now();
    while (sent < PER_INPUT && Date.now() - started < INPUT_BUDGET_MS) {
      try {
        const answer = await send(service.port, input.method, path, headers, payload, INPUT_BUDGET_MS * 4);
        statuses.add(String(answer.status));
        answerBytes = Math.max(answerBytes, answer.bytes);
      } catch (error) {
        statuses.add((error as Error).message);
      }
      sent++;
    }
    stop = true;
    const latencies = await ordinary;
    const cpuUs = cpuTimeUs(service.child.pid) - startedCpu - latencies.length * ordinaryCpuUs;
    rows.push({
      input: input.name,
      service: service.name,
      status: [...statuses].join('/'),
      answerBytes,
      sent,
      cpuMsPerRequest: Math.max(0, cpuUs) / sent / 1000,
      worstMs: Math.max(...latencies),
      medianMs: percentile(latencies, 0.5),
    });
    console.log(`  ${service.name} | ${input.name}: ${rows.at(-1)!.cpuMsPerRequest.toFixed(1)} ms CPU, ordinary worst ${rows.at(-1)!.worstMs.toFixed(0)} ms`);
  }
  return rows;
}

async function main(): Promise<void> {
  const services = (process.env.HOSTILE_SERVICES?.trim() || 'after=dist/src/main.js').split(',').map((pair) => {
    const [name, script] = pair.split('=');
    return { name, script: join(ROOT, script) };
  });
  console.log(`bench:hostile: ${INPUTS.length} inputs × ${PER_INPUT} (at most ${INPUT_BUDGET_MS / 1000} s each) on ${services.map((s) => s.name).join(', ')}; load ${loadAverage()}`);
  const rows: Row[] = [];
  for (const { name, script } of services) {
    const service = await startService(name, script);
    try {
      rows.push(...(await benchService(service)));
    } finally {
      await stopService(service);
    }
  }
  console.log(`\nload average at the end: ${loadAverage()}\n`);
  console.log('| input | build | answer | answer bytes | sent | CPU per request (ms) | ordinary client: worst (ms) | median (ms) |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    console.log(`| ${row.input} | ${row.service} | ${row.status} | ${row.answerBytes.toLocaleString('en')} | ${row.sent} | ${row.cpuMsPerRequest.toFixed(1)} | ${row.worstMs.toFixed(0)} | ${row.medianMs.toFixed(1)} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
