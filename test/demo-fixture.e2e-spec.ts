import { buildDemoFixture, DEMO_ORG_ID } from '../src/fixtures/demo-fixture';
import { FixtureLoader } from '../src/fixtures/fixture-loader.service';
import { FixtureRegistry } from '../src/fixtures/fixture-registry';
import { StartupFixtures } from '../src/fixtures/startup-fixtures.service';
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
      // operations.md: never with DATABASE_URL set, even on an empty server
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
