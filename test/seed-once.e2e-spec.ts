import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { apiKeys } from '../src/auth/api-keys.table';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { StartupFixtures } from '../src/seed/startup-fixtures.service';
import { newId } from '../libs/ids/ids';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * SEED_FILE at start-up applies a file content once (its SHA-256 recorded
 * with its rows): a restart with the same file writes nothing, so what
 * tenants deleted stays deleted; a changed file applies its upserts; two
 * instances starting at once apply it once. `seed <file>` from the CLI loads
 * the file every time. On both engines (`npm test`, `npm run test:pg`); the
 * ids are fresh per run, since under test:pg the database is shared.
 */
let t: TestApp;
/** SEED_FILE of every app here; each test writes its own content to it */
const seedFile = join(mkdtempSync(join(tmpdir(), 'seed-once-')), 'seed.json');

beforeEach(async () => {
  writeFileSync(seedFile, '{"orgs":[]}');
  t = await createTestApp({ seedFile });
});
afterEach(() => t.close());

function seedDocument(name: string) {
  const orgId = newId('org');
  const agentId = newId('agent');
  const token = `svc_live_${newId('key').slice(4)}${'s'.repeat(16)}`;
  const write = (agentName: string) => {
    writeFileSync(
      seedFile,
      JSON.stringify({
        orgs: [
          {
            id: orgId,
            name,
            slug: orgId.replace('_', '-'),
            api_keys: [
              { label: 'seed', token, scopes: ['agents:read', 'agents:write', 'agents:delete'] },
              // no token: one is generated, and shown, each time the file is applied
              { label: 'generated', scopes: ['agents:read'] },
            ],
            agents: [{ id: agentId, handle: 'helper', name: agentName, instructions: 'Help.' }],
          },
        ],
      }),
    );
    return seedFile;
  };
  return { orgId, agentId, auth: `Bearer ${token}`, write };
}

/**
 * What a start does before its port opens, with SEED_FILE set. A restart is
 * this again on the same database: StartupFixtures keeps nothing between
 * calls, the record is in the database (a copy of the template per app on
 * the embedded engine, so a restart here is a second call, not a second app).
 */
function start() {
  return t.app.get(StartupFixtures).load();
}

describe('SEED_FILE is applied once per file content', () => {
  test('an unchanged file is not applied again: a deleted seeded agent stays deleted, no key is generated again', async () => {
    const seed = seedDocument('Once');
    seed.write('Helper');
    const first = await start();
    expect(first.seeded?.orgs).toEqual([{ id: seed.orgId, name: 'Once' }]);
    expect(first.seeded?.generated_keys).toHaveLength(1);
    expect((await t.http.delete(`/api/v1/agents/${seed.agentId}`).set('Authorization', seed.auth)).status).toBe(200);

    const second = await start();
    expect(second.seeded).toBeNull();
    expect((await t.http.get(`/api/v1/agents/${seed.agentId}`).set('Authorization', seed.auth)).status).toBe(404);
    expect(t.logs.join('')).toMatch(/seed file already applied/);
  });

  test('a changed file applies its upserts', async () => {
    const seed = seedDocument('Changed');
    seed.write('Helper');
    const first = await start();
    expect(first.seeded).not.toBeNull();

    seed.write('Helper, renamed');
    const second = await start();
    expect(second.seeded?.orgs).toEqual([{ id: seed.orgId, name: 'Changed' }]);
    const agent = await t.http.get(`/api/v1/agents/${seed.agentId}`).set('Authorization', seed.auth);
    expect(agent.status).toBe(200);
    expect(agent.body.data.name).toBe('Helper, renamed');
  });

  test('a file that does not apply is not recorded: the next start tries it again', async () => {
    const seed = seedDocument('Conflicting');
    seed.write('Helper');
    await start();
    expect((await t.http.delete(`/api/v1/agents/${seed.agentId}`).set('Authorization', seed.auth)).status).toBe(200);
    const taken = await t.http
      .post('/api/v1/agents')
      .set('Authorization', seed.auth)
      .send({ handle: 'helper', name: 'Mine', instructions: 'Mine.' });
    expect(taken.status).toBe(201);

    // a changed file conflicts with the tenant's agent: not applied, the start goes on
    seed.write('Helper, renamed');
    expect((await start()).seeded).toBeNull();
    expect(t.logs.filter((line) => line.includes('seed file not applied'))).toHaveLength(1);
    // nothing was recorded for it, so it is tried (and reported) again rather than taken as applied
    expect((await start()).seeded).toBeNull();
    expect(t.logs.filter((line) => line.includes('seed file not applied'))).toHaveLength(2);
    expect(t.logs.join('')).not.toMatch(/already applied|insert into|Failed query/i);
  });

  test('two loads of one content at once: one applies it, the other finds it applied', async () => {
    const seed = seedDocument('Concurrent');
    const file = seed.write('Helper');
    const loader = t.app.get(FixtureLoader);
    const results = await Promise.all([loader.loadFileOnce(file), loader.loadFileOnce(file)]);
    expect(results.filter((result) => result.summary !== null)).toHaveLength(1);
    expect(results[0].contentSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(results[1].contentSha256).toBe(results[0].contentSha256);
    // the key without a token was generated once, not once per load
    expect(await t.connection.db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.orgId, seed.orgId))).toHaveLength(2);
  });

  test('the CLI\'s seed loads the file every time, recorded or not', async () => {
    const seed = seedDocument('Cli');
    const file = seed.write('Helper');
    expect((await start()).seeded).not.toBeNull();
    expect((await t.http.delete(`/api/v1/agents/${seed.agentId}`).set('Authorization', seed.auth)).status).toBe(200);
    const again = await t.app.get(FixtureLoader).loadFile(file);
    expect(again.generated_keys).toHaveLength(1);
    expect((await t.http.get(`/api/v1/agents/${seed.agentId}`).set('Authorization', seed.auth)).status).toBe(200);
  });
});
