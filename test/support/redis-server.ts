import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';

export interface TestRedis {
  url: string;
  port: number;
  /** the redis-server process id (tests freeze it with SIGSTOP) */
  pid: number;
  stop(): Promise<void>;
}

/** The redis-server binary on PATH, or null (tests that need it then skip, saying why). */
export function findRedisServer(): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'redis-server');
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A throwaway redis-server on a free port, without persistence; resolves once it answers PING. */
export async function startRedis(binary: string): Promise<TestRedis> {
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
  const deadline = Date.now() + 10_000;
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
