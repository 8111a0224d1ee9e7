import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../libs/net/free-port';

export interface TestRedis {
  url: string;
  port: number;
  /** the redis-server process id (tests freeze it with SIGSTOP) */
  pid: number;
  stop(): Promise<void>;
}

/** The redis-server binary on PATH, or null. */
function findRedisServer(): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'redis-server');
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * `describe` for tests that need redis-server: without the binary they are
 * skipped, saying why, except in CI (`CI=true`, set by `.ci/run`), where
 * they run and fail, so a CI machine without Redis cannot pass them unseen.
 */
export function describeWithRedis(what: string): jest.Describe {
  if (findRedisServer() || process.env.CI === 'true') return describe;
  console.warn(`SKIPPED ${what}: no redis-server binary on PATH (install the Debian package redis-server).`);
  return describe.skip;
}

/** Starts redis-server from PATH (throws when there is none). */
export function startRedisFromPath(): Promise<TestRedis> {
  const binary = findRedisServer();
  if (!binary) throw new Error('no redis-server binary on PATH (install the Debian package redis-server)');
  return startRedis(binary);
}

/** A throwaway redis-server on a free port, without persistence; resolves once it answers PING. */
async function startRedis(binary: string): Promise<TestRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  };
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  // a bound on the wait for a fresh child process, not a speed check: generous for a loaded machine
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') break;
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`redis-server did not answer PING on port ${port}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  client.disconnect();
  return { url, port, pid: child.pid!, stop };
}
