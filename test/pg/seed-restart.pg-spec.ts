import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { linesWithQueryText } from '../support/log-lines';
import { startServer, type ServerProcess } from '../support/server-process';

/**
 * SEED_FILE is applied once per file content. A restart with the same file
 * writes nothing (a seeded agent the tenant deleted stays deleted). What
 * tenants did since must never keep an instance from starting: a seeded agent
 * deleted, and its handle taken by a new agent, makes a changed file conflict
 * on the next start; the instance starts anyway, nothing of the file is
 * written (the tenant's agents stay as they are), and the error line names
 * the fixture path, never the query's text.
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
  let org: Record<string, unknown>;

  beforeAll(async () => {
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database "${dbName}"`);
    await admin.end();
    org = {
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

  it('does not bring back what the tenant deleted; a changed file that conflicts is not applied, is logged by its fixture path, and the instance starts', async () => {
    const first = await startServer(env());
    servers.push(first);
    expect((await fetch(`${first.base}/agents/${AGENT_ID}`, { headers: auth })).status).toBe(200);
    // the tenant deletes the seeded agent
    expect((await fetch(`${first.base}/agents/${AGENT_ID}`, { method: 'DELETE', headers: auth })).status).toBe(200);
    expect(await first.stop()).toBe(0);

    // the same file on a restart: already applied, the deleted agent stays deleted
    const unchanged = await startServer(env());
    servers.push(unchanged);
    expect((await fetch(`${unchanged.base}/agents/${AGENT_ID}`, { headers: auth })).status).toBe(404);
    expect(unchanged.output()).toContain('seed file already applied');
    // the tenant gives the seeded agent's handle to a new one
    const created = await fetch(`${unchanged.base}/agents`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ handle: 'helper', name: 'Mine', instructions: 'Mine.' }),
    });
    expect(created.status).toBe(201);
    const mine = ((await created.json()) as { data: { id: string } }).data.id;
    expect(await unchanged.stop()).toBe(0);

    // a changed file (the agent renamed) applies on the next start, and conflicts with the tenant's agent;
    // startServer throws if the process exits instead of serving
    writeFileSync(seedFile, JSON.stringify({ orgs: [{ ...org, agents: [{ id: AGENT_ID, handle: 'helper', name: 'Helper 2', instructions: 'Help.' }] }] }));
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
    expect(linesWithQueryText(servers.map((server) => server.output()))).toEqual([]);
  }, 600_000);
});
