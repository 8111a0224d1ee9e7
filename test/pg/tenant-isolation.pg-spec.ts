import { Client } from 'pg';
import { TenantConcurrencyGuard } from '../../src/guards/tenant-concurrency.guard';
import { createOrg, type TestOrg } from '../support/factories';
import { createTestApp, type TestApp } from '../support/test-app';
import { until } from '../support/until';

/**
 * One organization's slow requests do not hold the pool: with a pool of 4
 * and a bound of 2 requests in progress per organization, eight list
 * requests of org A stuck behind a lock take two connections, the other six
 * wait in A's own queue, and org B is answered meanwhile. What the test
 * asserts is what the code bounds (A's slots, B's answers arriving while A's
 * are all still pending), not wall-clock latency, which load can move.
 */
describe('one tenant cannot stall the others', () => {
  let t: TestApp;
  let side: Client;
  let orgA: TestOrg;
  let orgB: TestOrg;

  beforeAll(async () => {
    t = await createTestApp({ dbPoolMax: 4, orgConcurrency: 2, keyConcurrency: 2, dbStatementTimeoutMs: 1500 });
    orgA = await createOrg(t.app);
    orgB = await createOrg(t.app);
    side = new Client({ connectionString: process.env.DATABASE_URL });
    await side.connect();
  });
  afterAll(async () => {
    await side?.end();
    await t?.close();
  });

  it('answers org B while org A has eight requests stuck, and tells A to retry', async () => {
    const slots = t.app.get(TenantConcurrencyGuard);
    // four keys of A, two requests each: no key reaches its own bound, the organization does
    const keysA = await Promise.all([1, 2, 3, 4].map(async () => (await orgA.key(['conversations:read'])).auth));
    const authB = orgB.auth;
    // the conversations table locked: A's list requests wait on the lock, holding their connections
    await side.query('begin');
    await side.query('lock table conversations in access exclusive mode');
    let settledA = 0;
    let mostHeld = 0;
    const watch = setInterval(() => (mostHeld = Math.max(mostHeld, slots.orgs.held(orgA.orgId))), 5);
    try {
      const stuck = Array.from({ length: 8 }, (_, i) =>
        t.http
          .get('/api/v1/conversations')
          .set('Authorization', keysA[i % 4])
          .then((res) => {
            settledA += 1;
            return res;
          }),
      );
      await until(() => slots.orgs.held(orgA.orgId) >= 2);

      for (const path of ['/api/v1/agents', '/api/v1/org', '/api/v1/agents', '/api/v1/org', '/api/v1/agents']) {
        const res = await t.http.get(path).set('Authorization', authB);
        expect(res.status).toBe(200);
      }
      expect(settledA).toBe(0);
      expect(slots.orgs.held(orgA.orgId)).toBe(2);

      const answers = await Promise.all(stuck);
      for (const res of answers) {
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('service_unavailable');
        expect(res.headers['retry-after']).toBe('1');
      }
      // never more than two of A's requests at once on the database
      expect(mostHeld).toBe(2);
    } finally {
      clearInterval(watch);
      await side.query('rollback');
    }
    // and A is served again as soon as its requests are
    const after = await t.http.get('/api/v1/conversations').set('Authorization', keysA[0]);
    expect(after.status).toBe(200);
    expect(slots.orgs.held(orgA.orgId)).toBe(0);
  });
});
