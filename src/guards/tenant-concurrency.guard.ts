import { Inject, Injectable, type CanActivate } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { remainingMs } from '../database/request-scope';
import { Metrics } from '../metrics/metrics';
import { ApiError, ErrorCode } from '../common/api-error';
import { requestContext, type RequestStore } from '../common/request-context';

/** A request that waited its whole budget for a slot: the same answer as a saturated database. */
function busy(who: 'organization' | 'key', limit: number): ApiError {
  return new ApiError(
    ErrorCode.ServiceUnavailable,
    `This ${who === 'organization' ? 'organization' : 'API key'} already has ${limit} requests in progress; retry when one of them has finished.`,
    undefined,
    { 'Retry-After': '1' },
  );
}

/**
 * Counting slots per name (an organization, a key) with a FIFO queue each.
 * A waiter gives up after `waitMs`; names without holders or waiters are
 * forgotten, so the map holds only the tenants that are busy right now.
 */
export class KeyedSlots {
  private readonly slots = new Map<string, { held: number; waiting: Array<() => void> }>();

  constructor(readonly limit: number) {}

  held(name: string): number {
    return this.slots.get(name)?.held ?? 0;
  }

  /** requests waiting for one of `name`'s slots */
  waiting(name: string): number {
    return this.slots.get(name)?.waiting.length ?? 0;
  }

  /** The release function of a free slot, taken now; null when all `limit` are held (waiters included). */
  tryAcquire(name: string): (() => void) | null {
    let slot = this.slots.get(name);
    if (!slot) this.slots.set(name, (slot = { held: 0, waiting: [] }));
    if (slot.held >= this.limit) return null;
    slot.held += 1;
    return once(() => this.release(name, slot));
  }

  /** Resolves with the release function, or with null when no slot freed up within `waitMs`. */
  acquire(name: string, waitMs: number): Promise<(() => void) | null> {
    const free = this.tryAcquire(name);
    if (free || waitMs <= 0) return Promise.resolve(free);
    // tryAcquire left the entry in place: its slots are all held
    const slot = this.slots.get(name)!;
    return new Promise((resolve) => {
      const handOver = () => {
        clearTimeout(timer);
        resolve(once(() => this.release(name, slot)));
      };
      const timer = setTimeout(() => {
        slot.waiting.splice(slot.waiting.indexOf(handOver), 1);
        resolve(null);
      }, waitMs);
      slot.waiting.push(handOver);
    });
  }

  private release(name: string, slot: { held: number; waiting: Array<() => void> }): void {
    const next = slot.waiting.shift();
    if (next) return next(); // the slot passes straight to the next waiter
    slot.held -= 1;
    if (slot.held === 0) this.slots.delete(name);
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      fn();
    }
  };
}

/**
 * How many requests one organization, and one key, may have in progress on
 * this instance at once (ORG_CONCURRENCY, KEY_CONCURRENCY; docs/decisions.md,
 * "One tenant cannot stall the others"). Every authenticated request works
 * on the database, one pool connection at a time, so this bounds the
 * connections a tenant holds: however slow its queries, the rest of the pool
 * stays free for the others. A request over the bound waits in its own
 * tenant's queue, not in the pool's shared one, until a slot frees up or its
 * database deadline passes (then 503 `service_unavailable`, Retry-After: 1).
 * The key's slot is taken first, then the organization's: one order, no cycle.
 *
 * The last guard (app.module.ts), so only a request that may run takes
 * slots — except a request that sends a body, which takes them before its
 * body is read (its body may be slow to arrive: it then holds its own
 * tenant's slots); they are given back when its answer is sent, whatever it
 * is (the `onSend` hook, src/http/request-hooks.ts), which is when its
 * handler has finished with the database. Synchronous while the tenant has free slots:
 * Nest awaits only a guard that returns a promise.
 */
@Injectable()
export class TenantConcurrencyGuard implements CanActivate {
  readonly orgs: KeyedSlots;
  readonly keys: KeyedSlots;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    this.orgs = new KeyedSlots(config.orgConcurrency);
    this.keys = new KeyedSlots(config.keyConcurrency);
  }

  canActivate(): true | Promise<true> {
    const request = requestContext();
    // public routes (the access guards before this one refused every other request without a key)
    if (!request.auth) return true;
    // refused, or admitted, before its body was read (admit, called by the HTTP layer)
    if (request.tenantRefusal !== undefined) throw request.tenantRefusal;
    if (request.releaseTenantSlots) return true;
    const admitted = this.admit(request);
    return admitted === undefined ? true : admitted.then(() => true);
  }

  /**
   * Takes the key's slot, then the organization's, for a request with a
   * valid key: at once while the tenant has free slots (undefined), else a
   * promise that waits in the tenant's queue and rejects with the 503. The
   * HTTP layer calls it before reading a body (src/http/request-hooks.ts),
   * so a body still arriving holds its own tenant's slots, not everyone's
   * connections; the guard calls it for any other request.
   */
  admit(request: RequestStore): Promise<void> | undefined {
    const auth = request.auth!;
    const key = this.keys.tryAcquire(auth.keyId);
    if (key) return this.enterOrganization(request, auth.orgId, key);
    const queuedAt = Date.now();
    return this.keys.acquire(auth.keyId, this.waitMs()).then((waited) => {
      if (!waited) {
        this.metrics.tenantBusy('key');
        throw busy('key', this.keys.limit);
      }
      return this.enterOrganization(request, auth.orgId, waited, queuedAt);
    });
  }

  private enterOrganization(request: RequestStore, orgId: string, key: () => void, queuedAt?: number): Promise<void> | undefined {
    const org = this.orgs.tryAcquire(orgId);
    if (org) return this.hold(request, org, key, queuedAt);
    const orgQueuedAt = queuedAt ?? Date.now();
    return this.orgs.acquire(orgId, this.waitMs()).then((waited) => {
      if (!waited) {
        key();
        this.metrics.tenantBusy('organization');
        throw busy('organization', this.orgs.limit);
      }
      return this.hold(request, waited, key, orgQueuedAt);
    });
  }

  private hold(request: RequestStore, org: () => void, key: () => void, queuedAt?: number): undefined {
    if (queuedAt !== undefined) {
      const until = Date.now();
      request.tenantQueue = { waitedMs: until - queuedAt, until };
    }
    request.releaseTenantSlots = () => {
      org();
      key();
    };
    return undefined;
  }

  private waitMs(): number {
    return remainingMs() ?? this.config.dbStatementTimeoutMs;
  }
}
