import { lastValueFrom, NEVER, of } from 'rxjs';
import type { CallHandler, ExecutionContext } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { Metrics } from '../metrics/metrics';
import { ApiError } from './api-error';
import { KeyedSlots, TenantConcurrencyInterceptor } from './tenant-concurrency';

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

describe('TenantConcurrencyInterceptor', () => {
  const config = { orgConcurrency: 2, keyConcurrency: 1, dbStatementTimeoutMs: 30 } as AppConfig;
  const context = (orgId: string, keyId: string) =>
    ({ switchToHttp: () => ({ getRequest: () => ({ auth: { orgId, keyId } }) }) }) as unknown as ExecutionContext;
  // a request whose handler is still running
  const inProgress: CallHandler = { handle: () => NEVER };

  it('refuses with 503 and Retry-After the request of a key, then of an organization, that kept its bound busy for the whole wait', async () => {
    const interceptor = new TenantConcurrencyInterceptor(config, new Metrics(false));
    const quick: CallHandler = { handle: () => of('done') };
    // one request of key k1 in progress (its handler never completes here)
    interceptor.intercept(context('org', 'k1'), inProgress).subscribe();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const byKey = await lastValueFrom(interceptor.intercept(context('org', 'k1'), quick)).catch((error: unknown) => error);
    expect(byKey).toBeInstanceOf(ApiError);
    expect((byKey as ApiError).status).toBe(503);
    expect((byKey as ApiError).headers).toEqual({ 'Retry-After': '1' });
    expect((byKey as ApiError).message).toMatch(/API key already has 1 requests in progress/);
    // a second key fills the organization's two slots; a third key waits, then is refused
    interceptor.intercept(context('org', 'k2'), inProgress).subscribe();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const byOrg = await lastValueFrom(interceptor.intercept(context('org', 'k3'), quick)).catch((error: unknown) => error);
    expect((byOrg as ApiError).message).toMatch(/organization already has 2 requests in progress/);
    expect(interceptor.keys.held('k3')).toBe(0);
    // another organization is not affected
    expect(await lastValueFrom(interceptor.intercept(context('other', 'k4'), quick))).toBe('done');
  });
});
