import { PGlite } from '@electric-sql/pglite';
import { migrationFolder } from '../../test/support/migration-folder';
import { applyMigrations, type MigrationSession } from './migration-runner';

const session = (client: PGlite): MigrationSession => ({
  exec: async (text) => void (await client.exec(text)),
  query: async (text, params) => (await client.query(text, params)).rows as never,
});

const ONLINE = `-- online migration: outside a transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS "t_b_idx" ON "t" ("b");--> statement-breakpoint
DROP INDEX CONCURRENTLY IF EXISTS "t_a_idx";`;

describe('applyMigrations', () => {
  // one database for the file, emptied before each test: a fresh PGlite runs
  // initdb, seconds of CPU each, which is most of this file's time otherwise
  let client: PGlite;
  beforeAll(async () => {
    client = await PGlite.create();
  });
  beforeEach(async () => {
    await client.exec('DROP SCHEMA IF EXISTS drizzle CASCADE; DROP TABLE IF EXISTS "t"');
  });
  afterAll(() => client.close());

  const indexes = async () => (await client.query<{ name: string }>(`select indexname as name from pg_indexes where tablename = 't' order by 1`)).rows.map((r) => r.name);
  const recorded = async () => (await client.query<{ n: number }>(`select count(*)::int as n from drizzle.__drizzle_migrations`)).rows[0].n;

  it('applies ordinary and online files once, recording each in drizzle\'s table', async () => {
    const folder = migrationFolder([
      ['0000_t', 'CREATE TABLE "t" ("a" int, "b" int);--> statement-breakpoint\nCREATE INDEX "t_a_idx" ON "t" ("a");'],
      ['0001_online', ONLINE],
    ]);
    expect(await applyMigrations(session(client), folder, { concurrently: false })).toBe(2);
    expect(await indexes()).toEqual(['t_b_idx']);
    expect(await recorded()).toBe(2);
    expect(await applyMigrations(session(client), folder, { concurrently: false })).toBe(0);
    expect(await recorded()).toBe(2);
  });

  it('rolls an ordinary file back whole when one of its statements fails, and records nothing', async () => {
    const folder = migrationFolder([['0000_bad', 'CREATE TABLE "t" ("a" int);--> statement-breakpoint\nCREATE INDEX "x" ON "missing" ("a");']]);
    await expect(applyMigrations(session(client), folder, { concurrently: false })).rejects.toThrow();
    expect((await client.query(`select to_regclass('t') as t`)).rows).toEqual([{ t: null }]);
    expect(await recorded()).toBe(0);
  });

  it('continues a database migrated before: only the files newer than the last record run', async () => {
    const first = migrationFolder([['0000_t', 'CREATE TABLE "t" ("a" int, "b" int);']]);
    await applyMigrations(session(client), first, { concurrently: false });
    const both = migrationFolder([
      ['0000_t', 'CREATE TABLE "t" ("a" int, "b" int);'],
      ['0001_online', ONLINE],
    ]);
    expect(await applyMigrations(session(client), both, { concurrently: false })).toBe(1);
    expect(await indexes()).toEqual(['t_b_idx']);
  });
});
