import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  normalizeIp,
  ThrottlerGuard,
  type ThrottlerModuleOptions,
} from '@nestjs/throttler';
import type { ServerResponse } from 'node:http';
import { ApiKeysService } from '../auth/api-keys.service';
import { PUBLIC_ROUTE } from '../auth/auth.decorators';
import { ApiError, ErrorCode } from '../common/api-error';
import type { AuthContext, RequestContext } from '../common/request-context';
import { APP_CONFIG, type AppConfig, type RateLimitBudget } from '../config/config';
import type { RateLimitStorage, RateWindow, WindowUsage } from './rate-limit.storage';

export const MINUTE_WINDOW = 'minute';
export const HOUR_WINDOW = 'hour';

export const RATE_LIMIT_HEADERS = {
  limit: 'X-RateLimit-Limit',
  remaining: 'X-RateLimit-Remaining',
  reset: 'X-RateLimit-Reset',
} as const;

/**
 * The window a client should read: the one with the fewest requests left,
 * and of those (e.g. two full windows) the one that ends last.
 */
export function constrainingWindow(windows: WindowUsage[]): WindowUsage {
  const left = (w: WindowUsage) => Math.max(0, w.limit - w.hits);
  return windows.reduce((best, w) => (left(w) < left(best) || (left(w) === left(best) && w.resetsInMs > best.resetsInMs) ? w : best));
}

/**
 * One budget per API key across every endpoint (per client IP for public
 * routes and for requests whose key is missing or not valid), in two windows
 * at once — per minute and per hour — with the spec's un-suffixed headers.
 *
 * Built on @nestjs/throttler (module options, storage token, guard base,
 * IPv6 subnet tracking) but replacing its per-throttler loop, whose default
 * key includes the route, whose tracker is the IP, which emits suffixed
 * headers for named throttlers, and which takes one storage round trip per
 * window: here one atomic storage call counts both windows.
 *
 * Registered BEFORE ApiKeyGuard: the limiter must also see requests that the
 * key guard rejects (401 bad key → the IP budget, so key guessing is
 * throttled; 403 → the key's budget). It resolves the key through
 * ApiKeysService's short-lived cache and leaves a valid caller on the
 * request, where ApiKeyGuard finds it (one authentication per request).
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() private readonly storage: RateLimitStorage,
    reflector: Reflector,
    private readonly keys: ApiKeysService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super(options, storage, reflector);
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const { req, res } = this.getRequestResponse(context);
    const request = req as unknown as RequestContext;

    // spec: rate limiting applies to authenticated endpoints; the meta endpoints have no errors
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    const auth = await this.keys.authenticate(request.headers.authorization).catch(() => null);
    // ApiKeyGuard, next in line, takes the caller from here instead of hashing the token again
    if (auth) request.auth = auth;
    await this.consume(request, res as unknown as ServerResponse, auth);
    return true;
  }

  /**
   * Counts one request against the caller's budget (the key's, or the client
   * IP's when `auth` is null) and sets the rate-limit headers; throws 429
   * `rate_limited` when the budget is spent. Also called by the hot-route
   * dispatcher, so both paths count and answer alike.
   */
  async consume(request: RequestContext, response: ServerResponse, auth: AuthContext | null): Promise<void> {
    let tracker: string;
    let budget: RateLimitBudget;
    if (auth) {
      tracker = `key:${auth.keyId}`;
      budget = this.config.rateLimitPlans[auth.orgPlan] ?? this.defaultBudget();
    } else {
      // the 401 itself is ApiKeyGuard's to answer; here the attempt is counted per IP
      tracker = `ip:${await this.getTracker(request as unknown as Record<string, unknown>)}`;
      budget = this.defaultBudget();
    }

    const windows: RateWindow[] = this.throttlers.map((throttler) => ({
      name: throttler.name ?? MINUTE_WINDOW,
      ttlMs: Number(throttler.ttl),
      limit: throttler.name === HOUR_WINDOW ? budget.perHour : budget.perMinute,
    }));
    const { allowed, windows: usage } = await this.storage.hit(tracker, windows);

    const shown = constrainingWindow(usage);
    const resetsInSeconds = Math.max(1, Math.ceil(shown.resetsInMs / 1000));
    const res = response as unknown as Record<string, unknown>;
    this.setResponseHeader(res, RATE_LIMIT_HEADERS.limit, shown.limit);
    this.setResponseHeader(res, RATE_LIMIT_HEADERS.remaining, Math.max(0, shown.limit - shown.hits));
    this.setResponseHeader(res, RATE_LIMIT_HEADERS.reset, Math.ceil((Date.now() + shown.resetsInMs) / 1000));
    if (!allowed) {
      throw new ApiError(
        ErrorCode.RateLimited,
        `Rate limit exceeded: ${shown.limit} requests per ${shown.name}. Retry after ${resetsInSeconds} s.`,
        undefined,
        { 'Retry-After': String(resetsInSeconds) },
      );
    }
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    const address = (req as unknown as RequestContext).socket?.remoteAddress ?? 'unknown';
    return normalizeIp(address, this.ipv6SubnetPrefix);
  }

  protected override setResponseHeader(res: Record<string, unknown>, name: string, value: string | number): void {
    const response = res as unknown as ServerResponse;
    if (!response.headersSent) response.setHeader(name, String(value));
  }

  private defaultBudget(): RateLimitBudget {
    return { perMinute: this.config.rateLimitPerMinute, perHour: this.config.rateLimitPerHour };
  }
}
