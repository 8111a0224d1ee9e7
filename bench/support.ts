import { createServer } from 'node:net';
import { loadavg } from 'node:os';

/** A port nothing listens on now, for a server the bench starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The three load averages, printed beside every figure: a busy machine explains a slow one. */
export const loadAverage = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
