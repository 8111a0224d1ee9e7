import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SCOPES } from '../src/auth/scopes';
import { baseEnv, ensureBuilt, CLI_JS, run, startServer, tempDir, type Exit } from './support/processes';

/**
 * The built CLI (dist/src/cli/cli.js, the package's `bin`) against a PGlite
 * directory, as an operator runs it.
 */
jest.setTimeout(180_000);

beforeAll(() => ensureBuilt());

const dir = tempDir('cli');
const env = baseEnv({ PGLITE_DIR: join(dir, 'pglite') });
const cli = (...args: string[]) => run(CLI_JS, args, env);

/** --json: stdout is exactly one JSON document */
function json(exit: Exit): any { // eslint-disable-line @typescript-eslint/no-explicit-any
  expect(exit.stdout.endsWith('\n')).toBe(true);
  expect(exit.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(exit.stdout);
}

function expectOneLineFailure(exit: Exit, pattern: RegExp): void {
  expect(exit.code).not.toBe(0);
  const lines = exit.stderr.trim().split('\n');
  expect(lines).toEqual([expect.stringMatching(pattern)]);
}

let orgId: string;
let keyId: string;
let token: string;

describe('db migrate', () => {
  test('applies the migrations once; a second run has nothing to do', async () => {
    const firstRun = await cli('db', 'migrate', '--json');
    expect(firstRun.code).toBe(0);
    const applied = json(firstRun);
    expect(applied.total).toBeGreaterThanOrEqual(1);
    expect(applied.applied).toBe(applied.total);
    const again = json(await cli('db', 'migrate', '--json'));
    expect(again).toEqual({ applied: 0, total: applied.total });
  });
});

describe('orgs create and keys create / list / revoke', () => {
  test('orgs create prints the id (plain) or the organization (--json)', async () => {
    const plain = await cli('orgs', 'create', '--name', 'Plain Org');
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^org_[a-f0-9]{24}\n$/);
    const created = json(await cli('orgs', 'create', '--name', 'Acme Corp', '--slug', 'acme', '--plan', 'pro', '--json'));
    expect(created).toEqual({ id: expect.stringMatching(/^org_[a-f0-9]{24}$/), name: 'Acme Corp', slug: 'acme', plan: 'pro', status: 'active' });
    orgId = created.id;
  });

  test('a taken slug fails with one line', async () => {
    expectOneLineFailure(await cli('orgs', 'create', '--name', 'Again', '--slug', 'acme'), /slug "acme" already exists/);
  });

  test('keys create prints {id, token, scopes, org_id} once', async () => {
    const exit = await cli('keys', 'create', '--org', orgId, '--scopes', 'org:read,team:read', '--label', 'ci', '--json');
    expect(exit.code).toBe(0);
    expect(exit.stderr).toBe('');
    const created = json(exit);
    expect(Object.keys(created).sort()).toEqual(['id', 'org_id', 'scopes', 'token']);
    expect(created).toMatchObject({ org_id: orgId, scopes: ['org:read', 'team:read'] });
    expect(created.token).toMatch(/^svc_live_[A-Za-z0-9_-]{32,}$/);
    keyId = created.id;
    token = created.token;
  });

  test('keys create with --expires-at; bad input fails with one line and creates nothing', async () => {
    const expiring = json(await cli('keys', 'create', '--org', orgId, '--scopes', 'org:read', '--expires-at', '2030-01-31T00:00:00Z', '--json'));
    expect(expiring.id).toMatch(/^key_/);
    expectOneLineFailure(await cli('keys', 'create', '--org', orgId, '--scopes', 'org:read,agents:admin'), /unknown scopes: agents:admin/);
    expectOneLineFailure(await cli('keys', 'create', '--org', orgId, '--scopes', 'org:read', '--expires-at', 'tomorrow'), /--expires-at must be an ISO 8601/);
    expectOneLineFailure(await cli('keys', 'create', '--org', 'org_000000000000000000000000', '--scopes', 'org:read'), /organization org_0+ not found/);
    expectOneLineFailure(await cli('keys', 'create', '--org', orgId), /missing --scopes/);
  });

  test('keys list shows the keys, never a token, hash or lookup prefix', async () => {
    const exit = await cli('keys', 'list', '--org', orgId, '--json');
    const keys = json(exit);
    expect(keys).toHaveLength(2); // the --ci key and the expiring one
    expect(Object.keys(keys[0]).sort()).toEqual(['created_at', 'expires_at', 'id', 'label', 'last_used_at', 'org_id', 'revoked_at', 'scopes']);
    expect(keys.map((key: { id: string }) => key.id)).toContain(keyId);
    expect(exit.stdout).not.toContain(token.slice('svc_live_'.length, 'svc_live_'.length + 8));
    const plain = await cli('keys', 'list', '--org', orgId);
    expect(plain.stdout).toContain(keyId);
    expect(plain.stdout).not.toContain('svc_live_');
  });

  test('keys revoke; against the server the revoked key gets 401 and a live one 200', async () => {
    const live = json(await cli('keys', 'create', '--org', orgId, '--scopes', 'org:read', '--json'));
    const revoked = json(await cli('keys', 'revoke', keyId, '--json'));
    expect(revoked).toMatchObject({ id: keyId, org_id: orgId, revoked_at: expect.any(String) });
    expectOneLineFailure(await cli('keys', 'revoke', 'key_ffffffffffffffffffffffff'), /key key_f+ not found/);
    // the CLI and a server cannot share a PGlite directory at once: check after the CLI is done
    const server = await startServer({ PGLITE_DIR: join(dir, 'pglite') });
    try {
      const ok = await fetch(`${server.address}/org`, { headers: { Authorization: `Bearer ${live.token}` } });
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { data: { id: string } }).data.id).toBe(orgId);
      expect((await fetch(`${server.address}/org`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(401);
      // while the server runs, the CLI refuses the directory with one line instead of corrupting it
      expectOneLineFailure(await cli('keys', 'list', '--org', orgId), /in use by process \d+/);
    } finally {
      expect((await server.stop()).code).toBe(0);
    }
  });
});

describe('seed <file>', () => {
  const fixture = {
    orgs: [
      {
        id: 'org_6500000000000000000000c1',
        name: 'Seeded Org',
        slug: 'seeded-org',
        plan: 'pro',
        api_keys: [{ id: 'key_6500000000000000000000c1', label: 'generated', scopes: ['org:read'] }],
        members: [{ id: 'member_6500000000000000000000c1', email: 'a@example.com', role: 'owner' }],
      },
    ],
  };

  test('loads a fixture and prints generated tokens once; a second run upserts', async () => {
    const file = join(dir, 'fixture.json');
    writeFileSync(file, JSON.stringify(fixture));
    const first = json(await cli('seed', file, '--json'));
    expect(first.orgs).toEqual([{ id: 'org_6500000000000000000000c1', name: 'Seeded Org' }]);
    expect(first.generated_keys).toEqual([{ org_id: 'org_6500000000000000000000c1', id: 'key_6500000000000000000000c1', label: 'generated', token: expect.stringMatching(/^svc_live_/) }]);
    const again = await cli('seed', file);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/loaded 1 organization/);
    const keys = json(await cli('keys', 'list', '--org', 'org_6500000000000000000000c1', '--json'));
    expect(keys).toHaveLength(1);
  });

  test('an invalid fixture names the first bad path and writes nothing', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ orgs: [{ id: 'org_6500000000000000000000c2', name: 'Never', members: [{ email: 'x@example.com', role: 'boss' }] }] }));
    const exit = await cli('seed', file, '--json');
    expectOneLineFailure(exit, /invalid fixture: orgs\[0\]\.members\[0\]\.role/);
    expect(json(exit).error.code).toBe('invalid_fixture');
    expectOneLineFailure(await cli('keys', 'list', '--org', 'org_6500000000000000000000c2'), /not found/);
  });
});

describe('trash purge', () => {
  test('hard-deletes agents soft-deleted more than 30 days before --now, and only those', async () => {
    const now = new Date('2030-06-30T12:00:00Z');
    const daysBefore = (days: number) => new Date(now.getTime() - days * 24 * 60 * 60 * 1000).toISOString();
    const file = join(dir, 'trash.json');
    writeFileSync(
      file,
      JSON.stringify({
        orgs: [
          {
            id: 'org_7a0000000000000000000001',
            name: 'Trash Org',
            slug: 'trash-org',
            agents: [
              { id: 'agent_7a0000000000000000000031', handle: 'oldTrash', name: 'Old', instructions: 'x', deleted_at: daysBefore(31) },
              { id: 'agent_7a0000000000000000000029', handle: 'newTrash', name: 'New', instructions: 'x', deleted_at: daysBefore(29) },
              { id: 'agent_7a0000000000000000000000', handle: 'live', name: 'Live', instructions: 'x' },
            ],
          },
        ],
      }),
    );
    expect((await cli('seed', file)).code).toBe(0);

    const purged = json(await cli('trash', 'purge', '--now', now.toISOString(), '--json'));
    expect(purged).toMatchObject({ deleted_before: daysBefore(30), agents: 1, skipped: false });
    // a second run finds nothing left to purge
    expect(json(await cli('trash', 'purge', '--now', now.toISOString(), '--json'))).toMatchObject({ agents: 0 });
  });

  test('a bad --now fails with one line', async () => {
    expectOneLineFailure(await cli('trash', 'purge', '--now', 'yesterday'), /now/);
  });
});

describe('usage', () => {
  test('an unknown command or option exits 2 with one line', async () => {
    const unknown = await cli('agents', 'list');
    expect(unknown.code).toBe(2);
    expectOneLineFailure(unknown, /unknown command "agents list"/);
    expectOneLineFailure(await cli('orgs', 'create', '--name', 'x', '--colour', 'red'), /Unknown option '--colour'/);
  });

  test('--help lists every command', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    for (const command of ['db migrate', 'seed <file>', 'orgs create', 'keys create', 'keys revoke', 'keys list', 'trash purge']) expect(help.stdout).toContain(command);
  });
});

describe('through npm: --json stdout is one JSON document, and npm talks again', () => {
  const root = resolve(__dirname, '..');
  const npm = (args: string[]) => spawnSync('npm', args, { cwd: root, env, encoding: 'utf8' });
  /** the documented entry points for --json: the package bin, and npm run with -s */
  const entryPoints: Array<[string, string[]]> = [
    ['npm run -s cli', ['run', '-s', 'cli', '--']],
    ['npx agent-platform (the package bin)', ['exec', '--', 'agent-platform']],
  ];

  test.each(entryPoints)('%s: success prints the JSON document alone on stdout', (_name, prefix) => {
    const exit = npm([...prefix, 'keys', 'list', '--org', orgId, '--json']);
    expect(exit.status).toBe(0);
    expect(exit.stdout.trim().split('\n')).toHaveLength(1);
    expect(Array.isArray(JSON.parse(exit.stdout))).toBe(true);
  });

  test.each(entryPoints)('%s: failure prints one JSON error document alone on stdout', (_name, prefix) => {
    const exit = npm([...prefix, 'keys', 'list', '--org', 'org_000000000000000000000000', '--json']);
    expect(exit.status).not.toBe(0);
    expect(exit.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(exit.stdout)).toEqual({ error: { code: expect.any(String), message: expect.stringMatching(/not found/) } });
    expect(exit.stderr).toMatch(/not found/);
  });

  test('plain npm run prints its banner on stdout (why the README names -s): npm is not in a special output mode', () => {
    const exit = npm(['run', 'cli', '--', 'keys', 'list', '--org', orgId, '--json']);
    expect(exit.status).toBe(0);
    expect(exit.stdout).toMatch(/^> .* cli\n/m);
  });

  test('a missing script is reported by npm on stderr', () => {
    const exit = npm(['run', 'no-such-script']);
    expect(exit.status).not.toBe(0);
    expect(exit.stderr).toMatch(/Missing script: "no-such-script"/);
  });
});

describe('the valid scopes are named where a user looks', () => {
  test('keys create --scopes bogus:read lists every valid scope', async () => {
    const exit = await cli('keys', 'create', '--org', orgId, '--scopes', 'bogus:read');
    expectOneLineFailure(exit, /unknown scopes: bogus:read; valid scopes: /);
    for (const scope of SCOPES) expect(exit.stderr).toContain(scope);
  });

  test('a keys create usage error and --help list them too', async () => {
    const missing = await cli('keys', 'create', '--org', orgId);
    expectOneLineFailure(missing, /missing --scopes; usage: keys create .*valid scopes: /);
    for (const scope of SCOPES) expect(missing.stderr).toContain(scope);
    const help = await cli('--help');
    for (const scope of SCOPES) expect(help.stdout).toContain(scope);
  });
});
