import { Inject, Injectable } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { ApiError, ErrorCode } from '../common/api-error';
import { parseIpv6 } from '../../libs/url-policy/url-policy';
import type { AuthContext } from '../common/request-context';
import { APP_CONFIG, type AppConfig, type RateLimitBudget } from '../config/config';
import { Metrics } from '../metrics/metrics';
import { RATE_LIMIT_STORAGE, type RateLimitHit, type RateLimitStorage, type RateWindow, type WindowUsage } from './rate-limit.storage';

const MINUTE_WINDOW = 'minute';
const HOUR_WINDOW = 'hour';
const WINDOWS = [
  { name: MINUTE_WINDOW, ttlMs: 60_000 },
  { name: HOUR_WINDOW, ttlMs: 3_600_000 },
] as const;

export const RATE_LIMIT_HEADERS = {
  limit: 'X-RateLimit-Limit',
  remaining: 'X-RateLimit-Remaining',
  reset: 'X-RateLimit-Reset',
} as const;

/** Client addresses whose budget is known to be spent, remembered at most this many at once. */
const MAX_SPENT_CLIENTS = 10_000;

/** Whose budget a request counts against: its key's, or its client's (no valid key). */
type RateSubject = { auth: AuthContext } | { clientAddress: string | undefined };

/** The rate-limit headers of one request, and the 429 when its budget is spent. */
export interface RateDecision {
  headers: Record<string, string>;
  refusal: ApiError | null;
}

/**
 * The window a client should read: the one with the fewest requests left,
 * and of those (e.g. two full windows) the one that ends last.
 */
export function constrainingWindow(windows: WindowUsage[]): WindowUsage {
  const left = (w: WindowUsage) => Math.max(0, w.limit - w.hits);
  return windows.reduce((best, w) => (left(w) < left(best) || (left(w) === left(best) && w.resetsInMs > best.resetsInMs) ? w : best));
}

/**
 * The client an unauthenticated request is counted for: its IPv4 address, or
 * its IPv6 /64 (one host usually holds a whole /64, so a per-address budget
 * would not bind it). IPv4-mapped IPv6 is the IPv4 address.
 */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const bare = address.split('%', 1)[0].toLowerCase();
  if (!isIPv6(bare)) return bare;
  const bytes = parseIpv6(bare);
  if (!bytes) return bare;
  // ::ffff:a.b.c.d is the IPv4 client a.b.c.d
  if (bytes.slice(0, 10).every((byte) => byte === 0) && bytes[10] === 255 && bytes[11] === 255) return bytes.slice(12).join('.');
  const groups = [0, 2, 4, 6].map((i) => ((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return `${groups.join(':')}::/64`;
}

/**
 * One budget per API key across every endpoint (per client for requests
 * whose key is missing or not valid), in two windows at once — per minute
 * and per hour — counted in one atomic storage call (shared by every instance
 * when Redis is configured), with the contract's headers.
 */
@Injectable()
export class RateLimiter {
  /** client key → its budget is spent until then (learned from the storage's answers) */
  private readonly spentClients = new Map<string, { until: number }>();

  constructor(
    @Inject(RATE_LIMIT_STORAGE) private readonly storage: RateLimitStorage,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  /** Counts one request against the subject's budget; decided at once when the storage answers at once. */
  hit(subject: RateSubject, now = Date.now()): RateDecision | Promise<RateDecision> {
    const tracker = 'auth' in subject ? `key:${subject.auth.keyId}` : `ip:${clientKey(subject.clientAddress)}`;
    const budget = ('auth' in subject && this.config.rateLimitPlans[subject.auth.orgPlan]) || this.defaultBudget();
    const windows: RateWindow[] = WINDOWS.map(({ name, ttlMs }) => ({ name, ttlMs, limit: name === HOUR_WINDOW ? budget.perHour : budget.perMinute }));
    const started = performance.now();
    const decide = ({ allowed, windows: usage }: RateLimitHit): RateDecision => {
      // what Redis trouble may cost a request: bounded by RATE_LIMIT_REDIS_WAIT_MS
      this.metrics.rateLimitStoreWait((performance.now() - started) / 1000);
      const shown = constrainingWindow(usage);
      if (!('auth' in subject)) this.learnClient(clientKey(subject.clientAddress), shown, allowed, now);
      return decision(shown, allowed, now);
    };
    const counted = this.storage.hit(tracker, windows);
    return counted instanceof Promise ? counted.then(decide) : decide(counted);
  }

  /**
   * Does this instance know the client's budget (for requests without a
   * valid key) to be spent? The authentication step then looks its unknown
   * tokens up one at a time; it never refuses a token before the lookup, so
   * that a valid key is served whatever its address spent.
   */
  isSpent(clientAddress: string | undefined, now = Date.now()): boolean {
    const key = clientKey(clientAddress);
    const spent = this.spentClients.get(key);
    if (!spent) return false;
    if (spent.until <= now) {
      this.spentClients.delete(key);
      return false;
    }
    return true;
  }

  private learnClient(key: string, shown: WindowUsage, allowed: boolean, now: number): void {
    if (allowed && shown.hits < shown.limit) return;
    // spent: refused now, or this hit took the last request of a window
    this.spentClients.delete(key);
    if (this.spentClients.size >= MAX_SPENT_CLIENTS) {
      const oldest = this.spentClients.keys().next().value;
      if (oldest !== undefined) this.spentClients.delete(oldest);
    }
    this.spentClients.set(key, { until: now + shown.resetsInMs });
  }

  private defaultBudget(): RateLimitBudget {
    return { perMinute: this.config.rateLimitPerMinute, perHour: this.config.rateLimitPerHour };
  }
}

function decision(shown: WindowUsage, allowed: boolean, now: number): RateDecision {
  const resetsInSeconds = Math.max(1, Math.ceil(shown.resetsInMs / 1000));
  const headers: Record<string, string> = {
    [RATE_LIMIT_HEADERS.limit]: String(shown.limit),
    [RATE_LIMIT_HEADERS.remaining]: String(Math.max(0, shown.limit - shown.hits)),
    [RATE_LIMIT_HEADERS.reset]: String(Math.ceil((now + shown.resetsInMs) / 1000)),
  };
  const refusal = allowed
    ? null
    : new ApiError(
        ErrorCode.RateLimited,
        `Rate limit exceeded: ${shown.limit} requests per ${shown.name}. Retry after ${resetsInSeconds} s.`,
        undefined,
        { 'Retry-After': String(resetsInSeconds) },
      );
  return { headers, refusal };
}
