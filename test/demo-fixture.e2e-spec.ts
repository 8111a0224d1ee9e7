import { ApiKeysService } from '../src/auth/api-keys.service';
import { SCOPES } from '../src/auth/scopes';
import { buildDemoFixture, DEMO_ORG_ID } from '../src/seed/demo-fixture';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { FixtureRegistry } from '../src/fixtures/fixture-registry';
import { StartupFixtures } from '../src/seed/startup-fixtures.service';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The bundled demo, assembled from every module's demo file, must load with
 * the real sections: a module whose demo data does not validate fails here,
 * not on somebody's first `npm start`.
 */
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('the bundled demo fixture loads on first run', () => {
  test('every section with a demo file validates and is written; the key works with every scope', async () => {
    const document = buildDemoFixture(t.app.get(FixtureRegistry));
    // validation alone first: a FixtureError here names the module's bad field
    expect(() => t.app.get(FixtureLoader).parse(document)).not.toThrow();
    let demo;
    if (t.config.databaseUrl) {
      // never with DATABASE_URL set, even on an empty server
      expect((await t.app.get(StartupFixtures).load()).demo).toBeNull();
      demo = await t.app.get(FixtureLoader).load(document);
    } else {
      demo = (await t.app.get(StartupFixtures).load()).demo;
    }
    expect(demo?.orgs).toEqual([{ id: DEMO_ORG_ID, name: 'Demo Organization' }]);
    expect(demo?.generated_keys).toHaveLength(1);
    const auth = `Bearer ${demo!.generated_keys[0].token}`;
    const document2 = (await t.http.get('/api/v1/openapi.json')).body as { paths: Record<string, { get?: { 'x-required-scope'?: string } }> };
    // every list endpoint the app serves answers 200 for the demo key
    for (const [path, item] of Object.entries(document2.paths)) {
      if (!item.get || path.includes('{')) continue;
      const res = await t.http.get(`/api/v1${path}`).set('Authorization', auth);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    const team = await t.http.get('/api/v1/team').set('Authorization', auth);
    expect(team.body.data.length).toBeGreaterThanOrEqual(3);
  });

  test('a second start finds an organization and loads nothing', async () => {
    expect((await t.app.get(StartupFixtures).load()).demo).toBeNull();
  });
});

describe('the demo is consistent with the agent cascade (README walk-through)', () => {
  test('reactivating the inactive demo agent through the API restores the trigger its deactivation paused', async () => {
    const document = buildDemoFixture(t.app.get(FixtureRegistry));
    const orgs = document.orgs as Array<Record<string, Array<Record<string, unknown>>>>;
    const inactive = orgs[0].agents.filter((agent) => agent.is_active === false);
    expect(inactive.length).toBeGreaterThan(0);
    const paused = orgs[0].triggers.filter((trigger) => inactive.some((agent) => agent.id === trigger.agent_id));
    expect(paused.length).toBeGreaterThan(0);

    // the demo is already loaded by the first describe; a key of the demo organization
    const key = await t.app.get(ApiKeysService).create({ orgId: DEMO_ORG_ID, label: 'walk-through', scopes: [...SCOPES], expiresAt: null });
    const auth = `Bearer ${key.token}`;
    for (const trigger of paused) {
      expect((await t.http.get(`/api/v1/triggers/${trigger.id}`).set('Authorization', auth).expect(200)).body.data.is_active).toBe(false);
    }
    for (const agent of inactive) {
      await t.http.patch(`/api/v1/agents/${agent.id}`).set('Authorization', auth).send({ is_active: true }).expect(200);
    }
    for (const trigger of paused) {
      expect((await t.http.get(`/api/v1/triggers/${trigger.id}`).set('Authorization', auth).expect(200)).body.data.is_active).toBe(true);
    }
  });
});

describe('fixtures: triggers and chatbots carry the cascade state the API would leave', () => {
  const agentId = 'agent_7650a1000000000000000001';
  const fixture = (agent: Record<string, unknown>, trigger: Record<string, unknown>, chatbot: Record<string, unknown> = {}) => ({
    orgs: [
      {
        name: 'Cascade fixture org',
        agents: [{ id: agentId, handle: 'cascade', name: 'c', instructions: 'x', ...agent }],
        triggers: [{ agent_id: agentId, connector_type: 'custom', event: 'svc.custom_trigger', ...trigger }],
        chatbots: [{ name: 'bot', agent_id: agentId, ...chatbot }],
      },
    ],
  });
  const parse = (document: unknown) => () => t.app.get(FixtureLoader).parse(document);

  test('agent_deactivated under an inactive agent, with a date-time, is accepted on triggers and chatbots', () => {
    const paused = { is_active: false, deactivated_reason: 'agent_deactivated', deactivated_at: '2026-11-13T09:00:00Z' };
    expect(parse(fixture({ is_active: false, deactivated_reason: 'manual', deactivated_at: '2026-11-13T09:00:00Z' }, paused, paused))).not.toThrow();
  });

  test.each([
    [{}, { is_active: false, deactivated_reason: 'agent_deactivated' }, 'orgs[0].triggers[0].deactivated_reason'],
    [{ is_active: false }, { is_active: true, deactivated_reason: 'agent_deactivated' }, 'orgs[0].triggers[0].deactivated_reason'],
    [{ is_active: false }, { is_active: false, deactivated_reason: 'agent_deleted' }, 'orgs[0].triggers[0].deactivated_reason'],
    [{ is_active: false }, { is_active: false, deactivated_at: '2026-11-13T09:00:00Z' }, 'orgs[0].triggers[0].deactivated_at'],
    [{ is_active: false }, { is_active: false, deactivated_reason: 'agent_deactivated', deactivated_at: '2026-11-13' }, 'orgs[0].triggers[0].deactivated_at'],
    [{ is_active: false, deactivated_at: '2026-11-13' }, {}, 'orgs[0].agents[0].deactivated_at'],
  ])('agent %j, trigger %j: rejected at %s', (agent, trigger, path) => {
    expect(parse(fixture(agent, trigger))).toThrow(expect.objectContaining({ path }));
  });

  test('a chatbot marked agent_deactivated under an active agent is rejected', () => {
    expect(parse(fixture({}, {}, { is_active: false, deactivated_reason: 'agent_deactivated' }))).toThrow(
      expect.objectContaining({ path: 'orgs[0].chatbots[0].deactivated_reason' }),
    );
  });

  test('agent colors: every CSS hex form, as in the API', () => {
    for (const color of ['#abc', '#abcd', '#aabbcc', '#aabbccdd']) expect(parse(fixture({ color }, {}))).not.toThrow();
    expect(parse(fixture({ color: '#abcde' }, {}))).toThrow(expect.objectContaining({ path: 'orgs[0].agents[0].color' }));
  });
});
