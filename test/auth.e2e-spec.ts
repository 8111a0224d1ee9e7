import { eq, sql } from 'drizzle-orm';
import { sha256Hex } from '../libs/crypto/crypto';
import { ApiKeysService, generateToken } from '../src/auth/api-keys.service';
import { SCOPES } from '../src/auth/scopes';
import { loadConfig } from '../src/config/config';
import { apiKeys } from '../src/auth/api-keys.table';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { TestOnlyModule } from './support/test-only.module';

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp({}, { imports: [TestOnlyModule] });
  org = await createOrg(t.app);
});
afterAll(() => t.close());

async function expect401(authorization: string | undefined): Promise<void> {
  const req = t.http.get('/api/v1/org');
  const res = authorization === undefined ? await req : await req.set('Authorization', authorization);
  expect(res.status).toBe(401);
  expect(res.body.error.code).toBe('unauthorized');
  expect(res.body.error.request_id).toBe(res.headers['x-request-id']);
}

describe('a missing, malformed, wrong, revoked or expired key → 401 unauthorized', () => {
  test('missing Authorization header', () => expect401(undefined));

  test.each([
    ['empty', ''],
    ['scheme only', 'Bearer'],
    ['Basic scheme', `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['token without scheme', 'svc_live_' + 'a'.repeat(40)],
    ['wrong prefix', 'Bearer sk_live_' + 'a'.repeat(40)],
    ['test prefix', 'Bearer svc_test_' + 'a'.repeat(40)],
    ['secret too short', 'Bearer svc_live_short'],
    ['characters outside base64url', 'Bearer svc_live_' + 'a'.repeat(39) + '!'],
    ['two tokens', `Bearer svc_live_${'a'.repeat(40)} svc_live_${'b'.repeat(40)}`],
  ])('malformed: %s', (_name, header) => expect401(header));

  test('wrong: a well-formed token nobody issued', () => expect401(`Bearer ${generateToken()}`));

  test('wrong: a real token with one character changed', async () => {
    const last = org.token.at(-1) === 'a' ? 'b' : 'a';
    await expect401(`Bearer ${org.token.slice(0, -1)}${last}`);
  });

  test('wrong: a real token of the right prefix but truncated', () => expect401(`Bearer ${org.token.slice(0, -1)}`));

  test('revoked', async () => {
    const key = await org.key(['org:read'], { revoked: true });
    await expect401(key.auth);
  });

  test('revoked after use (through the service)', async () => {
    const key = await org.key(['org:read']);
    expect((await t.http.get('/api/v1/org').set('Authorization', key.auth)).status).toBe(200);
    await t.app.get(ApiKeysService).revoke(key.id);
    await expect401(key.auth);
  });

  test('expired', async () => {
    const key = await org.key(['org:read'], { expiresAt: new Date(Date.now() - 1000) });
    await expect401(key.auth);
  });

  test('not yet expired works; the scheme is case-insensitive', async () => {
    const key = await org.key(['org:read'], { expiresAt: new Date(Date.now() + 60_000) });
    const res = await t.http.get('/api/v1/org').set('Authorization', key.auth.replace('Bearer', 'bearer'));
    expect(res.status).toBe(200);
  });
});

describe('a valid key without the scope → 403 insufficient_scope', () => {
  test('every endpoint needs its one scope; no scope implies another', async () => {
    const allButOrg = await org.key(SCOPES.filter((scope) => scope !== 'org:read'));
    const res = await t.http.get('/api/v1/org').set('Authorization', allButOrg.auth);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
    const allButTeam = await org.key(SCOPES.filter((scope) => scope !== 'team:read'));
    expect((await t.http.get('/api/v1/team').set('Authorization', allButTeam.auth)).body.error.code).toBe('insufficient_scope');
  });

  test('the one scope is enough', async () => {
    const key = await org.key(['team:read']);
    expect((await t.http.get('/api/v1/team').set('Authorization', key.auth)).status).toBe(200);
  });

  test('GET / and GET /openapi.json are public, even with a bad key', async () => {
    expect((await t.http.get('/api/v1/')).status).toBe(200);
    expect((await t.http.get('/api/v1/openapi.json')).status).toBe(200);
    expect((await t.http.get('/api/v1/').set('Authorization', 'Bearer nonsense')).status).toBe(200);
  });
});

describe('organization status: past_due forbids writes, suspended forbids reads and writes → 403 org_inactive', () => {
  const write = (auth: string) => t.http.post('/api/v1/test-only/echo').set('Authorization', auth).send({ name: 'x' });
  const read = (auth: string) => t.http.get('/api/v1/org').set('Authorization', auth);

  test.each([
    ['active', 200, 201],
    ['trialing', 200, 201],
    ['past_due', 200, 403],
    ['suspended', 403, 403],
  ])('%s: read %i, write %i', async (status, readStatus, writeStatus) => {
    const subject = await createOrg(t.app, { status });
    const r = await read(subject.auth);
    expect(r.status).toBe(readStatus);
    if (readStatus === 403) expect(r.body.error.code).toBe('org_inactive');
    const w = await write(subject.auth);
    expect(w.status).toBe(writeStatus);
    if (writeStatus === 403) expect(w.body.error.code).toBe('org_inactive');
  });

  test('a missing scope is reported before the organization state', async () => {
    const subject = await createOrg(t.app, { status: 'suspended' });
    const key = await subject.key(['team:read']);
    expect((await read(key.auth)).body.error.code).toBe('insufficient_scope');
  });
});

describe('a revocation takes effect within 5 seconds, even though validated keys are cached', () => {
  test('API_KEY_CACHE_TTL_MS defaults to 5000 and cannot be set above 5000', () => {
    const base = { PGLITE_DIR: 'memory' };
    expect(loadConfig(base).apiKeyCacheTtlMs).toBe(5000);
    expect(loadConfig({ ...base, API_KEY_CACHE_TTL_MS: '0' }).apiKeyCacheTtlMs).toBe(0);
    expect(() => loadConfig({ ...base, API_KEY_CACHE_TTL_MS: '5001' })).toThrow(/API_KEY_CACHE_TTL_MS/);
  });

  test('revoked in the database by another process: served from cache at most TTL, then 401', async () => {
    const short = await createTestApp({ apiKeyCacheTtlMs: 300 });
    try {
      const subject = await createOrg(short.app);
      expect((await short.http.get('/api/v1/org').set('Authorization', subject.auth)).status).toBe(200);
      // another instance (or the CLI) revokes: this process's cache is not told
      await short.connection.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, subject.keyId));
      await new Promise((resolve) => setTimeout(resolve, 350));
      expect((await short.http.get('/api/v1/org').set('Authorization', subject.auth)).status).toBe(401);
    } finally {
      await short.close();
    }
  });

  test('with the default TTL a cached key is re-checked once 5 s have passed', async () => {
    const keys = t.app.get(ApiKeysService);
    const key = await org.key(['org:read']);
    const now = Date.now();
    await expect(keys.authenticate(key.auth, now)).resolves.toMatchObject({ keyId: key.id });
    await t.connection.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, key.id));
    // within the window the cached answer may still be served …
    await expect(keys.authenticate(key.auth, now + 4_999)).resolves.toMatchObject({ keyId: key.id });
    // … at 5 s it is not
    await expect(keys.authenticate(key.auth, now + 5_000)).rejects.toMatchObject({ code: 'unauthorized' });
  });

  test('an unknown token is not cached as valid when it is issued later', async () => {
    const keys = t.app.get(ApiKeysService);
    const token = generateToken();
    const now = Date.now();
    await expect(keys.authenticate(`Bearer ${token}`, now)).rejects.toMatchObject({ code: 'unauthorized' });
    await keys.create({ orgId: org.orgId, label: 'late', scopes: ['org:read'], token });
    await expect(keys.authenticate(`Bearer ${token}`, now + 5_000)).resolves.toMatchObject({ orgId: org.orgId });
  });
});

describe('keys are stored only as a hash plus a short lookup prefix', () => {
  test('no column of the row holds the token or its secret', async () => {
    const key = await org.key(['org:read']);
    const result = (await t.connection.db.execute(sql`select row_to_json(k)::text as row from api_keys k where id = ${key.id}`)) as unknown as {
      rows: Array<{ row: string }>;
    };
    const stored = result.rows[0].row;
    const secret = key.token.slice('svc_live_'.length);
    expect(stored).not.toContain(key.token);
    expect(stored).not.toContain(secret);
    expect(stored).toContain(sha256Hex(key.token));
    const [row] = await t.connection.db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
    expect(row.lookupPrefix.length).toBeLessThanOrEqual(8);
    expect(secret.startsWith(row.lookupPrefix)).toBe(true);
  });

  test('generated tokens are svc_live_ plus at least 32 URL-safe characters, all different', () => {
    const tokens = new Set(Array.from({ length: 50 }, () => generateToken()));
    expect(tokens.size).toBe(50);
    for (const token of tokens) expect(token).toMatch(/^svc_live_[A-Za-z0-9_-]{32,}$/);
  });
});

describe('last_used_at is recorded without a write per request', () => {
  test('requests do not write; the batched flush does', async () => {
    const subject = await createOrg(t.app);
    const lastUsed = async () => (await t.connection.db.select().from(apiKeys).where(eq(apiKeys.id, subject.keyId)))[0].lastUsedAt;
    const before = Date.now();
    for (let i = 0; i < 3; i++) expect((await t.http.get('/api/v1/org').set('Authorization', subject.auth)).status).toBe(200);
    expect(await lastUsed()).toBeNull();
    await t.app.get(ApiKeysService).flushLastUsed();
    const recorded = await lastUsed();
    expect(recorded).not.toBeNull();
    expect(recorded!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(recorded!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
  });
});
