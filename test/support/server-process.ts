import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../libs/net/free-port';

const ROOT = join(__dirname, '..', '..');
const BUILT_SERVER = join(ROOT, 'dist', 'src', 'main.js');

/** A real `node dist/src/main.js` process, as deployed (one of several instances). */
export interface ServerProcess {
  child: ChildProcess;
  base: string;
  /** everything it wrote, stdout and stderr */
  output(): string;
  /** SIGTERM, then wait for the exit code */
  stop(): Promise<number | null>;
}

/**
 * dist/ must be current before a process is spawned from it. Where the
 * project has scripts/build-if-stale.cjs (the CLI branch), it rebuilds a
 * stale dist/ under its lock, so test files that spawn servers never race a
 * tsc rewriting the files under them; otherwise dist/ must have been built.
 */
function assertBuilt(): void {
  const builder = join(ROOT, 'scripts', 'build-if-stale.cjs');
  if (existsSync(builder)) (require(builder) as { buildIfStale(): void }).buildIfStale();
  if (!existsSync(BUILT_SERVER)) throw new Error(`${BUILT_SERVER} is missing: run npm run build first (CI builds before test:pg)`);
}

export async function startServer(env: Record<string, string>, options: { waitReady?: boolean } = {}): Promise<ServerProcess> {
  assertBuilt();
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, [BUILT_SERVER], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const server: ServerProcess = {
    child,
    base: `http://127.0.0.1:${port}/api/v1`,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  if (options.waitReady !== false) await waitReady(server);
  return server;
}

async function waitReady(server: ServerProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (server.child.exitCode !== null) throw new Error(`server exited with ${server.child.exitCode}: ${server.output().slice(-2000)}`);
    try {
      const res = await fetch(`${server.base}/`);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`server did not start: ${server.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
