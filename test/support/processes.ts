import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
export const SERVER_JS = join(ROOT, 'dist', 'src', 'main.js');
export const CLI_JS = join(ROOT, 'dist', 'src', 'cli', 'cli.js');

/**
 * The spawned server and CLI run dist/: rebuild it when a source is newer
 * than the last build (only the test files that spawn pay for it).
 */
export function ensureBuilt(): void {
  require('../../scripts/build-if-stale.cjs').buildIfStale();
}

export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `agent-platform-${label}-`));
}

/** A clean environment: nothing of the developer's shell (DATABASE_URL, …) leaks in. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...extra };
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function collect(child: ChildProcess): { out: () => string; err: () => string; exited: Promise<Exit> } {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<Exit>((done) => child.on('close', (code, signal) => done({ code, signal, stdout, stderr })));
  return { out: () => stdout, err: () => stderr, exited };
}

/** Runs a process to its end. */
export function run(file: string, args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<Exit> {
  const child = spawn(process.execPath, [file, ...args], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return collect(child).exited.finally(() => clearTimeout(timer));
}

export interface RunningServer {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:41234/api/v1, from the "listening on" log line */
  address: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<Exit>;
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

/** Starts the built server on a free port and waits for the line that names its address. */
export async function startServer(env: Record<string, string>, timeoutMs = 60_000): Promise<RunningServer> {
  const child = spawn(process.execPath, [SERVER_JS], {
    env: baseEnv({ PORT: '0', HOST: '127.0.0.1', ...env }),
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = collect(child);
  const address = await new Promise<string>((resolveAddress, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${io.out()}\n${io.err()}`)), timeoutMs);
    const check = () => {
      const match = /"msg":"listening on (http:\/\/[^"]+)"/.exec(io.out());
      if (match) {
        clearTimeout(timer);
        resolveAddress(match[1]);
      }
    };
    child.stdout!.on('data', check);
    void io.exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${exit.code}) before listening:\n${exit.stdout}\n${exit.stderr}`));
    });
  });
  return {
    child,
    address,
    stdout: io.out,
    stderr: io.err,
    exited: io.exited,
    stop: (signal = 'SIGTERM') => {
      child.kill(signal);
      return io.exited;
    },
  };
}

/** Waits until the server's stdout (or stderr) matches (output written after the "listening" line). */
export async function waitForOutput(server: RunningServer, pattern: RegExp, timeoutMs = 10_000, stream: 'stdout' | 'stderr' = 'stdout'): Promise<RegExpExecArray> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(server[stream]());
    if (match) return match;
    if (Date.now() > until) throw new Error(`no ${pattern} in the server's ${stream}:\n${server[stream]()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
