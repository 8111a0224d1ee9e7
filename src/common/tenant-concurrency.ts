import { CallHandler, ExecutionContext, Inject, Injectable, type NestInterceptor } from '@nestjs/common';
import { defer, finalize, from, mergeMap, type Observable } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { remainingMs } from '../database/request-scope';
import { Metrics } from '../metrics/metrics';
import { ApiError, ErrorCode } from './api-error';
import type { RequestContext } from './request-context';

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

  /** Resolves with the release function, or with null when no slot freed up within `waitMs`. */
  acquire(name: string, waitMs: number): Promise<(() => void) | null> {
    let entry = this.slots.get(name);
    if (!entry) this.slots.set(name, (entry = { held: 0, waiting: [] }));
    const slot = entry;
    const release = () => {
      const next = slot.waiting.shift();
      if (next) return next(); // the slot passes straight to the next waiter
      slot.held -= 1;
      if (slot.held === 0) this.slots.delete(name);
    };
    if (slot.held < this.limit) {
      slot.held += 1;
      return Promise.resolve(once(release));
    }
    if (waitMs <= 0) return Promise.resolve(null);
    return new Promise((resolve) => {
      const handOver = () => {
        clearTimeout(timer);
        resolve(once(release));
      };
      const timer = setTimeout(() => {
        slot.waiting.splice(slot.waiting.indexOf(handOver), 1);
        resolve(null);
      }, waitMs);
      slot.waiting.push(handOver);
    });
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
 */
@Injectable()
export class TenantConcurrencyInterceptor implements NestInterceptor {
  readonly orgs: KeyedSlots;
  readonly keys: KeyedSlots;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    this.orgs = new KeyedSlots(config.orgConcurrency);
    this.keys = new KeyedSlots(config.keyConcurrency);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const auth = context.switchToHttp().getRequest<RequestContext>().auth;
    if (!auth) return next.handle();
    return defer(() => from(this.enter(auth.keyId, auth.orgId))).pipe(mergeMap((leave) => next.handle().pipe(finalize(leave))));
  }

  private async enter(keyId: string, orgId: string): Promise<() => void> {
    const wait = () => remainingMs() ?? this.config.dbStatementTimeoutMs;
    const key = await this.keys.acquire(keyId, wait());
    if (!key) {
      this.metrics.tenantBusy('key');
      throw busy('key', this.keys.limit);
    }
    const org = await this.orgs.acquire(orgId, wait());
    if (!org) {
      key();
      this.metrics.tenantBusy('organization');
      throw busy('organization', this.orgs.limit);
    }
    return () => {
      org();
      key();
    };
  }
}
