import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { packageRoot } from '../../src/common/package-root';
import { loadConfig } from '../../src/config/config';
import { DatabaseConnection } from '../../src/database/connection';
import { applyMigrations, type MigrationSession } from '../../src/database/migration-runner';
import { migrationFolder } from '../support/migration-folder';

/**
 * Online migrations on a PostgreSQL server: CONCURRENTLY refuses to run in a
 * transaction block, so these statements pass only if the runner sends them
 * outside one; a concurrent build that failed leaves an invalid index, which
 * the next run replaces instead of keeping it for IF NOT EXISTS.
 */
describe('online migrations on PostgreSQL', () => {
  let admin: Client;
  let client: Client;
  const database = `migration_runner_${process.pid}`;
  const session = (): MigrationSession => ({
    exec: async (text) => void (await client.query(text)),
    query: async (text, params) => (await client.query(text, params)).rows,
  });

  beforeAll(async () => {
    admin = new Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`drop database if exists ${database}`);
    await admin.query(`create database ${database}`);
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${database}`;
    client = new Client({ connectionString: url.toString() });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await admin?.query(`drop database if exists ${database}`);
    await admin?.end();
  });

  it('builds indexes concurrently outside a transaction and rebuilds one a failed build left invalid', async () => {
    await client.query(`create table t (a int, b int); insert into t values (1, 1), (2, 1)`);
    // a unique build over duplicates fails and leaves "t_b_key" behind, invalid
    await expect(client.query(`create unique index concurrently t_b_key on t (b)`)).rejects.toThrow();
    const validity = async () => (await client.query(`select indisvalid as valid from pg_index where indexrelid = to_regclass('t_b_key')`)).rows;
    expect(await validity()).toEqual([{ valid: false }]);
    await client.query(`update t set b = a`);

    const folder = migrationFolder([
      ['0000_online', `-- online migration: outside a transaction\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "t_b_key" ON "t" ("b");--> statement-breakpoint\nCREATE INDEX CONCURRENTLY IF NOT EXISTS "t_a_idx" ON "t" ("a");`],
    ]);
    expect(await applyMigrations(session(), folder, { concurrently: true })).toBe(1);
    expect(await validity()).toEqual([{ valid: true }]);
    expect((await client.query(`select count(*)::int as n from pg_indexes where indexname = 't_a_idx'`)).rows).toEqual([{ n: 1 }]);
    await expect(client.query(`insert into t values (3, 1)`)).rejects.toThrow(/duplicate key/);
  });

  it('instances starting together on an empty database migrate one at a time, and the online migration does not wait for the others forever', async () => {
    // an instance waiting for the migration lock inside a statement would hold a snapshot, and the
    // migrating instance's CREATE INDEX CONCURRENTLY waits for every older snapshot: both hung
    const fresh = `${database}_fresh`;
    await admin.query(`drop database if exists ${fresh}`);
    await admin.query(`create database ${fresh}`);
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${fresh}`;
    const quiet = { error: () => undefined, warn: () => undefined };
    const config = loadConfig({ ...process.env, DATABASE_URL: url.toString() });
    const instances = await Promise.all([1, 2, 3].map(() => DatabaseConnection.open(config, quiet)));
    try {
      await Promise.all(instances.map((instance) => instance.migrate()));
      const check = new Client({ connectionString: url.toString() });
      await check.connect();
      try {
        // every migration applied once, every index built valid
        const applied = await check.query(`select count(*)::int as n from drizzle.__drizzle_migrations`);
        const journal = JSON.parse(readFileSync(join(packageRoot(), 'src/database/migrations/meta/_journal.json'), 'utf8')) as { entries: unknown[] };
        expect(applied.rows).toEqual([{ n: journal.entries.length }]);
        expect((await check.query(`select count(*)::int as n from pg_index where not indisvalid`)).rows).toEqual([{ n: 0 }]);
      } finally {
        await check.end();
      }
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
      await admin.query(`drop database if exists ${fresh}`);
    }
  }, 60_000);
});
