import { PGlite } from '@electric-sql/pglite';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseConnection, migrationsFolder, PGLITE_EXTENSIONS } from '../../src/database/connection';
import { STATUS_RECORD_DIR_ENV } from './status-recorder';

/**
 * Migrate once per run, then every test file starts from a copy of the
 * migrated database (a fresh PGlite plus migrations costs seconds; loading a
 * dump costs a fraction of that). The dump is keyed by the migrations' hash,
 * and not compressed: gunzipping it cost ~200 ms of CPU per test app.
 */
export default async function globalSetup(): Promise<void> {
  // where the workers record the statuses they get (checked by global-teardown.ts)
  process.env[STATUS_RECORD_DIR_ENV] = mkdtempSync(join(tmpdir(), 'agent-platform-statuses-'));
  if (process.env.DATABASE_URL) return; // server runs migrate per process under the advisory lock
  const folder = migrationsFolder();
  const hash = createHash('sha256');
  for (const file of readdirSync(folder, { recursive: true }).map(String).sort()) {
    const full = join(folder, file);
    if (file.endsWith('.sql') || file.endsWith('.json')) hash.update(file).update(readFileSync(full));
  }
  const path = join(tmpdir(), `agent-platform-template-${hash.digest('hex').slice(0, 16)}.tar`);
  process.env.PGLITE_TEMPLATE = path;
  if (existsSync(path)) return;
  const client = await PGlite.create({ extensions: PGLITE_EXTENSIONS });
  const connection = DatabaseConnection.fromPglite(client);
  await connection.migrate();
  const dump = await client.dumpDataDir('none');
  writeFileSync(`${path}.tmp-${process.pid}`, Buffer.from(await dump.arrayBuffer()));
  require('node:fs').renameSync(`${path}.tmp-${process.pid}`, path);
  await client.close();
}
