import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { RouteAccess } from '../auth/route-access';
import { requestContext, type HttpRequest } from '../common/request-context';
import { Metrics } from '../metrics/metrics';
import { RateLimiter, type RateDecision } from '../rate-limit/rate-limiter';

/** Writes a rate-limit decision on the response: the X-RateLimit-* headers, and the 429 when the budget is spent. */
@Injectable()
export class RateLimitHeaders {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: Metrics,
  ) {}

  apply(response: unknown, decision: RateDecision): void {
    this.metrics.rateLimitDecision(decision.refusal ? 'limited' : 'allowed');
    const adapter = this.adapterHost.httpAdapter;
    for (const [name, value] of Object.entries(decision.headers)) adapter.setHeader(response, name, value);
    if (decision.refusal) throw decision.refusal;
  }
}

/**
 * The first guard (app.module.ts): counts the request against its key's
 * budget (the first request hook checked the key, src/http/request-hooks.ts), or its client address's when the key
 * is missing or bad (so key guessing is throttled: TRUSTED_PROXIES says
 * when the address comes from X-Forwarded-For); X-RateLimit-* headers,
 * 429 when spent. Public routes are not rate limited.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(
    private readonly access: RouteAccess,
    private readonly limiter: RateLimiter,
    private readonly headers: RateLimitHeaders,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.access.isOpen(context)) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequest>();
    const { auth, authError } = requestContext();
    // a key that could not be checked (the database): the authentication guard answers 503, uncounted
    if (authError !== undefined) return true;
    const subject = auth ? { auth } : { clientAddress: request.ip ?? request.socket?.remoteAddress };
    const apply = (decision: RateDecision): true => {
      this.headers.apply(http.getResponse<unknown>(), decision);
      return true;
    };
    // synchronous with the in-process store: Nest awaits only a guard that returns a promise
    const decided = this.limiter.hit(subject);
    return decided instanceof Promise ? decided.then(apply) : apply(decided);
  }
}
