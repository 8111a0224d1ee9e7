import type { AppConfig } from '../config/config';
import { Metrics } from '../metrics/metrics';
import { ApiError } from '../common/api-error';
import { runInRequestContext, type RequestStore } from '../common/request-context';
import { KeyedSlots, TenantConcurrencyGuard } from './tenant-concurrency.guard';

describe('KeyedSlots', () => {
  it('gives out `limit` slots per name, hands a released slot to the oldest waiter, and forgets idle names', async () => {
    const slots = new KeyedSlots(2);
    const a1 = await slots.acquire('a', 1000);
    const a2 = await slots.acquire('a', 1000);
    const b1 = await slots.acquire('b', 0);
    expect([a1, a2, b1].every(Boolean)).toBe(true);
    expect(slots.held('a')).toBe(2);
    const order: string[] = [];
    const third = slots.acquire('a', 1000).then((release) => (order.push('third'), release));
    const fourth = slots.acquire('a', 1000).then((release) => (order.push('fourth'), release));
    a1!();
    a1!(); // a second call of one release function frees nothing more
    const r3 = await third;
    expect(order).toEqual(['third']);
    expect(slots.held('a')).toBe(2);
    a2!();
    const r4 = await fourth;
    expect(order).toEqual(['third', 'fourth']);
    r3!();
    r4!();
    b1!();
    expect(slots.held('a')).toBe(0);
    expect(slots.held('b')).toBe(0);
  });

  it('answers null when no slot frees up within the wait, and the waiter leaves the queue', async () => {
    const slots = new KeyedSlots(1);
    const held = await slots.acquire('a', 0);
    expect(await slots.acquire('a', 0)).toBeNull();
    expect(await slots.acquire('a', 20)).toBeNull();
    held!();
    expect(slots.held('a')).toBe(0);
    expect(await slots.acquire('a', 0)).not.toBeNull();
  });
});

describe('TenantConcurrencyGuard', () => {
  const config = { orgConcurrency: 2, keyConcurrency: 1, dbStatementTimeoutMs: 30 } as AppConfig;
  const request = (orgId: string, keyId: string): RequestStore => ({ auth: { orgId, keyId } }) as RequestStore;
  // the guard reads the request being served from its context
  const activate = (guard: TenantConcurrencyGuard, req: RequestStore) => runInRequestContext(req, () => guard.canActivate());
  const refusal = (outcome: true | Promise<true>) => Promise.resolve(outcome).then(() => null, (error: unknown) => error);

  it('admits at once while the tenant has free slots, and the answer being sent gives them back', () => {
    const guard = new TenantConcurrencyGuard(config, new Metrics(false));
    const first = request('org', 'k1');
    // synchronous: Nest awaits only a guard that returns a promise
    expect(activate(guard, first)).toBe(true);
    expect([guard.keys.held('k1'), guard.orgs.held('org')]).toEqual([1, 1]);
    first.releaseTenantSlots!();
    first.releaseTenantSlots!(); // called once per answer; a second call frees nothing more
    expect([guard.keys.held('k1'), guard.orgs.held('org')]).toEqual([0, 0]);
    // a public route (no key) takes no slot
    expect(activate(guard, {} as RequestStore)).toBe(true);
  });

  it('lets a waiting request in when a slot is given back within its wait', async () => {
    const guard = new TenantConcurrencyGuard({ ...config, dbStatementTimeoutMs: 1000 }, new Metrics(false));
    const first = request('org', 'k1');
    activate(guard, first);
    const second = request('org', 'k1');
    const admitted = activate(guard, second);
    expect(admitted).toBeInstanceOf(Promise);
    first.releaseTenantSlots!();
    await expect(admitted).resolves.toBe(true);
    expect(guard.keys.held('k1')).toBe(1);
    second.releaseTenantSlots!();
    expect(guard.keys.held('k1')).toBe(0);
  });

  it('refuses with 503 and Retry-After the request of a key, then of an organization, that kept its bound busy for the whole wait', async () => {
    const guard = new TenantConcurrencyGuard(config, new Metrics(false));
    // one request of key k1 in progress (its answer is never sent here)
    expect(activate(guard, request('org', 'k1'))).toBe(true);
    const byKey = await refusal(activate(guard, request('org', 'k1')));
    expect(byKey).toBeInstanceOf(ApiError);
    expect((byKey as ApiError).status).toBe(503);
    expect((byKey as ApiError).headers).toEqual({ 'Retry-After': '1' });
    expect((byKey as ApiError).message).toMatch(/API key already has 1 requests in progress/);
    // a second key fills the organization's two slots; a third key waits, then is refused
    expect(activate(guard, request('org', 'k2'))).toBe(true);
    const byOrg = await refusal(activate(guard, request('org', 'k3')));
    expect((byOrg as ApiError).message).toMatch(/organization already has 2 requests in progress/);
    // the refused request gave its key's slot back
    expect(guard.keys.held('k3')).toBe(0);
    // another organization is not affected
    expect(activate(guard, request('other', 'k4'))).toBe(true);
  });
});
