import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { shellAssignments } from './pg-cluster';

const SCRIPT = join(__dirname, '..', '..', 'scripts', 'pgbouncer-test.sh');

/** A throw-away PgBouncer (pool_mode = transaction) of a test's own. */
export interface TestPgBouncer {
  /** the server's database, through the pooler */
  url: string;
  dir: string;
  stop(): void;
}

/** Starts one in front of `serverUrl` with `serverConnections` server connections (scripts/pgbouncer-test.sh). */
export function startPgBouncer(serverUrl: string, serverConnections: number): TestPgBouncer {
  const out = execFileSync('bash', [SCRIPT, 'start', serverUrl], {
    encoding: 'utf8',
    env: { ...process.env, PGBOUNCER_POOL_SIZE: String(serverConnections) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const vars = shellAssignments(out);
  const dir = vars.PGBOUNCER_DIR;
  return { url: vars.DATABASE_URL, dir, stop: () => execFileSync('bash', [SCRIPT, 'stop', dir], { stdio: 'inherit' }) };
}
