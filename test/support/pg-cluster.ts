import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';

const SCRIPT = join(__dirname, '..', '..', 'scripts', 'pg-test-cluster.sh');

/** A PostgreSQL cluster of the test's own, which it may stop and start at will. */
export interface TestCluster {
  dir: string;
  port: number;
  url: string;
  /** pg_ctl stop -m fast: sessions are terminated, the data is kept */
  pause(): Promise<void>;
  resume(): Promise<void>;
  destroy(): void;
}

/** The `NAME=value` lines a test script prints (scripts/pg-test-cluster.sh, scripts/pgbouncer-test.sh). */
export function shellAssignments(out: string): Record<string, string> {
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
}

export function startTestCluster(): TestCluster {
  const out = execFileSync('bash', [SCRIPT, 'start'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const vars = shellAssignments(out);
  const dir = vars.PG_TEST_DIR;
  const run = (command: string) => execFileSync('bash', [SCRIPT, command, dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  // asynchronous, so that an in-process server keeps serving while it runs
  const runAsync = async (command: string) => {
    await promisify(execFile)('bash', [SCRIPT, command, dir]);
  };
  return {
    dir,
    port: Number(vars.PG_TEST_PORT),
    url: vars.DATABASE_URL,
    pause: () => runAsync('pause'),
    resume: () => runAsync('resume'),
    destroy: () => run('stop'),
  };
}
