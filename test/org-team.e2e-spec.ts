import { eq } from 'drizzle-orm';
import { newId } from '../libs/ids/ids';
import { orgs } from '../src/database/orgs.table';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { createOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const token = () => `svc_live_${'k'.repeat(20)}${newId('key').slice(4)}`;

async function loadOrg(extra: Record<string, unknown> = {}) {
  const id = newId('org');
  const key = token();
  await t.app.get(FixtureLoader).load({
    orgs: [
      {
        id,
        name: 'Acme',
        slug: `acme-${id.slice(-10)}`,
        plan: 'pro',
        status: 'trialing',
        credits: { total: 1000, used: 10, remaining: 990, top_up: 5, reset_at: '2030-02-01T00:00:00Z' },
        limits: { agents: 10, connectors: null, sources: 5, custom_tool_slots: 3 },
        trial: { start_date: '2026-01-01T00:00:00Z', end_date: null },
        created_at: '2025-06-01T12:00:00Z',
        api_keys: [{ token: key, scopes: ['org:read', 'team:read'] }],
        ...extra,
      },
    ],
  });
  return { id, auth: `Bearer ${key}` };
}

describe('GET /org returns the Org of the calling key, exactly the contract fields', () => {
  test('shape, values and nullability', async () => {
    const org = await loadOrg();
    const res = await t.http.get('/api/v1/org').set('Authorization', org.auth);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.meta)).toEqual(['request_id']);
    expect(res.body.data).toStrictEqual({
      id: org.id,
      name: 'Acme',
      slug: expect.stringMatching(/^acme-/),
      plan: 'pro',
      status: 'trialing',
      credits: { total: 1000, used: 10, remaining: 990, top_up: 5, reset_at: '2030-02-01T00:00:00.000Z' },
      // limits not given are null: unlimited
      limits: { agents: 10, connectors: null, sources: 5, chatbots: null, scheduled_triggers: null, custom_tool_slots: 3 },
      trial: { start_date: '2026-01-01T00:00:00.000Z', end_date: null },
      created_at: '2025-06-01T12:00:00.000Z',
    });
  });

  test('an organization without a trial has trial null', async () => {
    const org = await createOrg(t.app);
    const res = await t.http.get('/api/v1/org').set('Authorization', org.auth);
    expect(res.body.data.trial).toBeNull();
    expect(Object.keys(res.body.data).sort()).toEqual(['created_at', 'credits', 'id', 'limits', 'name', 'plan', 'slug', 'status', 'trial']);
  });

  test('internal columns never appear', async () => {
    const org = await createOrg(t.app);
    const text = JSON.stringify((await t.http.get('/api/v1/org').set('Authorization', org.auth)).body);
    for (const internal of ['updated_at', 'updatedAt', 'org_id', 'orgId']) expect(text).not.toContain(internal);
  });
});

describe('GET /team returns the members as an array, newest first, not paginated', () => {
  const members = [
    { id: 'member_650000000000000000000a01', user_id: 'u1', name: 'Ada', email: 'ada@example.com', role: 'owner', is_active: true, last_login_at: '2026-01-02T03:04:05Z', created_at: '2024-01-01T00:00:00Z' },
    { id: 'member_650000000000000000000a02', user_id: 'u2', name: null, email: 'b@example.com', role: 'member', is_active: false, last_login_at: null, created_at: null },
  ];

  test('shape and order', async () => {
    const org = await loadOrg({ members });
    const res = await t.http.get('/api/v1/team').set('Authorization', org.auth);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.meta)).toEqual(['request_id']); // no next_cursor: not paginated
    expect(res.body.data).toHaveLength(2);
    expect(res.body.data[0]).toStrictEqual({
      id: 'member_650000000000000000000a02',
      user_id: 'u2',
      name: null,
      email: 'b@example.com',
      role: 'member',
      is_active: false,
      last_login_at: null,
      created_at: expect.any(String), // the fixture omitted it: the load time
    });
    expect(res.body.data[1]).toStrictEqual({
      id: 'member_650000000000000000000a01',
      user_id: 'u1',
      name: 'Ada',
      email: 'ada@example.com',
      role: 'owner',
      is_active: true,
      last_login_at: '2026-01-02T03:04:05.000Z',
      created_at: '2024-01-01T00:00:00.000Z',
    });
  });

  test('a team without members is an empty array', async () => {
    const org = await createOrg(t.app);
    const res = await t.http.get('/api/v1/team').set('Authorization', org.auth);
    expect(res.body.data).toEqual([]);
  });

  test("another organization's members are not listed", async () => {
    const a = await loadOrg({ members: [{ ...members[0], id: newId('member'), user_id: 'shared-user' }] });
    const b = await createOrg(t.app);
    expect((await t.http.get('/api/v1/team').set('Authorization', b.auth)).body.data).toEqual([]);
    expect((await t.http.get('/api/v1/team').set('Authorization', a.auth)).body.data).toHaveLength(1);
  });
});

describe('fixtures: validated whole before anything is written, errors name the first bad path', () => {
  test('a bad member email names orgs[0].members[1].email and writes nothing', async () => {
    const id = newId('org');
    const load = t.app.get(FixtureLoader).load({
      orgs: [{ id, name: 'Broken', members: [{ email: 'ok@example.com', role: 'owner' }, { email: 'not-an-email', role: 'owner' }] }],
    });
    await expect(load).rejects.toMatchObject({ name: 'FixtureError', path: 'orgs[0].members[1].email' });
    expect(await t.connection.db.select().from(orgs).where(eq(orgs.id, id))).toEqual([]);
  });

  test('an unknown field is an error naming it', async () => {
    await expect(t.app.get(FixtureLoader).load({ orgs: [{ name: 'X', colour: 'red' }] })).rejects.toMatchObject({ path: 'orgs[0].colour' });
  });

  test('loading the same fixture twice upserts by id', async () => {
    const id = newId('org');
    const doc = { orgs: [{ id, name: 'Twice', slug: `twice-${id.slice(-8)}`, members: [{ id: newId('member'), email: 'a@example.com', role: 'admin' }] }] };
    await t.app.get(FixtureLoader).load(doc);
    await t.app.get(FixtureLoader).load({ orgs: [{ ...doc.orgs[0], name: 'Twice renamed' }] });
    const [row] = await t.connection.db.select().from(orgs).where(eq(orgs.id, id));
    expect(row.name).toBe('Twice renamed');
  });
});
