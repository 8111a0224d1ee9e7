import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { startServer, type ServerProcess } from '../support/server-process';

/**
 * SEED_FILE is loaded at every start. What tenants did since must never keep
 * an instance from starting: a seeded agent deleted, and its handle taken by
 * a new agent, makes the file conflict on the next start; the instance starts
 * anyway, nothing of the file is written (the tenant's agents stay as they
 * are), and the error line names the fixture path, never the query's text.
 */
const ORG_ID = 'org_5eed00000000000000000001';
const AGENT_ID = 'agent_5eed00000000000000000001';
const TOKEN = `svc_live_${'seedrestart'.repeat(4)}`;

describe('a SEED_FILE that conflicts with tenants\' data on a restart', () => {
  const adminUrl = process.env.DATABASE_URL!;
  const dbName = `seed_${process.pid}_${Date.now().toString(36)}`;
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  const seedFile = join(mkdtempSync(join(tmpdir(), 'seed-restart-')), 'seed.json');
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database "${dbName}"`);
    await admin.end();
    const org = {
      id: ORG_ID,
      name: 'Seeded',
      slug: `seeded-${process.pid}`,
      api_keys: [{ label: 'seed', token: TOKEN, scopes: ['agents:read', 'agents:write', 'agents:delete'] }],
      agents: [{ id: AGENT_ID, handle: 'helper', name: 'Helper', instructions: 'Help.' }],
    };
    writeFileSync(seedFile, JSON.stringify({ orgs: [org] }));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
  });

  const env = () => ({ DATABASE_URL: databaseUrl, SEED_FILE: seedFile, TRASH_PURGE_CRON: 'off', IDEMPOTENCY_PURGE_CRON: 'off' });
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('starts, applies nothing of the file, and logs the conflict by its fixture path', async () => {
    const first = await startServer(env());
    servers.push(first);
    expect((await fetch(`${first.base}/agents/${AGENT_ID}`, { headers: auth })).status).toBe(200);
    // the tenant deletes the seeded agent and gives its handle to a new one
    expect((await fetch(`${first.base}/agents/${AGENT_ID}`, { method: 'DELETE', headers: auth })).status).toBe(200);
    const created = await fetch(`${first.base}/agents`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ handle: 'helper', name: 'Mine', instructions: 'Mine.' }),
    });
    expect(created.status).toBe(201);
    const mine = ((await created.json()) as { data: { id: string } }).data.id;
    expect(await first.stop()).toBe(0);

    // the restart: startServer throws if the process exits instead of serving
    const second = await startServer(env());
    servers.push(second);
    expect((await fetch(`${second.base}/agents/${mine}`, { headers: auth })).status).toBe(200);
    // not brought back: nothing of the file was written
    expect((await fetch(`${second.base}/agents/${AGENT_ID}`, { headers: auth })).status).toBe(404);
    const lines = second
      .output()
      .split('\n')
      .filter((line) => line.includes('seed file not applied'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ level: 'error', path: 'orgs[0].agents', constraint: 'agents_org_handle_unique' });
    expect(second.output()).not.toMatch(/Failed query|insert into|"params"/i);
  }, 600_000);
});
