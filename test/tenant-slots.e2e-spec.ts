import { TenantConcurrencyGuard } from '../src/guards/tenant-concurrency.guard';
import { OrgsService } from '../src/orgs/orgs.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { until } from './support/until';

/**
 * The tenant bound's slots are taken by the last guard and given back when
 * the answer is sent (docs/decisions.md, "One tenant cannot stall the
 * others"). With one slot per key and per organization, a slot that one
 * kind of answer failed to give back would refuse every later request of
 * the tenant: each answer below is followed by a request that needs the slot.
 */
describe('tenant slots are given back by every kind of answer', () => {
  let t: TestApp;
  let org: TestOrg;
  let guard: TenantConcurrencyGuard;
  beforeAll(async () => {
    t = await createTestApp({ orgConcurrency: 1, keyConcurrency: 1, dbStatementTimeoutMs: 200 });
    org = await createOrg(t.app);
    guard = t.app.get(TenantConcurrencyGuard);
  });
  afterAll(async () => {
    await t?.close();
  });

  function expectNoSlotHeld(): void {
    expect(guard.keys.held(org.keyId)).toBe(0);
    expect(guard.orgs.held(org.orgId)).toBe(0);
  }

  const key = `slots-${Date.now()}`;
  const answers: Array<[string, () => Promise<{ status: number }>, number]> = [
    ['a read', () => t.http.get('/api/v1/org').set('Authorization', org.auth), 200],
    ['a HEAD', () => t.http.head('/api/v1/agents').set('Authorization', org.auth), 200],
    ['a 404 from the handler', () => t.http.get('/api/v1/agents/agent_000000000000000000000000').set('Authorization', org.auth), 404],
    ['a 422 from the pipe', () => t.http.get('/api/v1/agents?limit=0').set('Authorization', org.auth), 422],
    ['a 422 from body validation', () => t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'x y' }), 422],
    [
      'a keyed write',
      () => t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Idempotency-Key', key).send({ handle: 'slotsBot', name: 'Slots', instructions: 'Hi.' }),
      201,
    ],
    [
      'its replay',
      () => t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Idempotency-Key', key).send({ handle: 'slotsBot', name: 'Slots', instructions: 'Hi.' }),
      201,
    ],
    [
      'a key reused with another body (409)',
      () => t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Idempotency-Key', key).send({ handle: 'otherBot', name: 'Other', instructions: 'Hi.' }),
      409,
    ],
    ['a 409 from the handler', () => t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'slotsBot', name: 'Again', instructions: 'Hi.' }), 409],
  ];

  it.each(answers)('%s', async (_name, send, status) => {
    expect((await send()).status).toBe(status);
    expectNoSlotHeld();
    // the one slot is free: the next request is answered, not kept waiting into a 503
    expect((await t.http.get('/api/v1/org').set('Authorization', org.auth)).status).toBe(200);
  });

  it('a request whose client hung up before the answer gives its slots back once the handler ends', async () => {
    // the handler outlives the client: it starts, the client hangs up, then the test lets it finish
    // (the slots are held until its answer is (not) sent)
    const orgs = t.app.get(OrgsService);
    const getOrg = orgs.getOrg.bind(orgs);
    let handlerStarted!: () => void;
    const started = new Promise<void>((resolve) => (handlerStarted = resolve));
    let finishHandler!: () => void;
    const finish = new Promise<void>((resolve) => (finishHandler = resolve));
    let handlerDone!: () => void;
    const ended = new Promise<void>((resolve) => (handlerDone = resolve));
    const slow = jest.spyOn(orgs, 'getOrg').mockImplementationOnce(async (orgId) => {
      handlerStarted();
      await finish;
      try {
        return await getOrg(orgId);
      } finally {
        handlerDone();
      }
    });
    try {
      const request = t.http.get('/api/v1/org').set('Authorization', org.auth);
      const hungUp = request.then(() => null, (error: { code?: string }) => error);
      await started;
      request.abort();
      expect((await hungUp)?.code).toBe('ABORTED');
      expect(guard.keys.held(org.keyId)).toBe(1);
      finishHandler();
      await ended;
      // given back when the answer is sent, a moment after the handler returns
      await until(() => guard.keys.held(org.keyId) === 0 && guard.orgs.held(org.orgId) === 0);
      expect((await t.http.get('/api/v1/org').set('Authorization', org.auth)).status).toBe(200);
    } finally {
      slow.mockRestore();
    }
  });

  it('a request refused by the access guards takes no slot', async () => {
    const readOnly = await org.key(['agents:read']);
    expect((await t.http.get('/api/v1/org').set('Authorization', readOnly.auth)).status).toBe(403);
    expect((await t.http.get('/api/v1/org').set('Authorization', 'Bearer svc_live_nope')).status).toBe(401);
    expectNoSlotHeld();
  });
});
