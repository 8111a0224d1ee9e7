import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A migrations folder in drizzle's layout (journal + one .sql per entry), for the migration runner's tests. */
export function migrationFolder(files: Array<[tag: string, sql: string]>): string {
  const dir = mkdtempSync(join(tmpdir(), 'migrations-'));
  mkdirSync(join(dir, 'meta'));
  const entries = files.map(([tag], idx) => ({ idx, version: '7', when: 1_700_000_000_000 + idx, tag, breakpoints: true }));
  writeFileSync(join(dir, 'meta', '_journal.json'), JSON.stringify({ version: '7', dialect: 'postgresql', entries }));
  for (const [tag, sql] of files) writeFileSync(join(dir, `${tag}.sql`), sql);
  return dir;
}
