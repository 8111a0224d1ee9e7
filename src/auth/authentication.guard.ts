import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { RequestContext } from '../common/request-context';
import { RateLimitHeaders } from '../rate-limit/rate-limit.guard';
import { RateLimiter } from '../rate-limit/rate-limiter';
import { ApiKeysService, AuthenticationFailure } from './api-keys.service';
import { RouteAccess } from './route-access';

/**
 * The first of the three access guards (registered in order in
 * app.module.ts): who is calling. Sets `request.auth` for a valid key, or
 * `request.authFailure` for a missing or bad one; it refuses nothing itself
 * but one thing: a client whose budget for bad keys this instance already
 * knows to be spent, with a token that was not a valid key lately, gets its
 * 429 here, before the lookup, so that a refused guess costs no query
 * (docs/decisions.md). The 401 comes from the authorization guard, after the
 * rate-limit guard counted the request, so key guessing is throttled.
 *
 * Synchronous when the key is known in memory (valid or not): Nest awaits
 * only a guard that returns a promise.
 */
@Injectable()
export class AuthenticationGuard implements CanActivate {
  constructor(
    private readonly access: RouteAccess,
    private readonly keys: ApiKeysService,
    private readonly limiter: RateLimiter,
    private readonly rateLimitHeaders: RateLimitHeaders,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.access.isOpen(context)) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<RequestContext>();
    const caller = this.keys.authenticateFromMemory(request.headers.authorization);
    if (caller !== undefined) return this.identify(request, caller);
    if (!this.keys.wasValidLately(request.headers.authorization)) {
      const refused = this.limiter.refusedClient(request.socket?.remoteAddress);
      if (refused) this.rateLimitHeaders.apply(http.getResponse<unknown>(), refused);
    }
    // within the request's database deadline (set around the pipeline), which the handler's queries share
    return this.keys.authenticate(request.headers.authorization).then(
      (auth) => this.identify(request, auth),
      (error: unknown) => {
        if (error instanceof AuthenticationFailure) return this.identify(request, error);
        throw error;
      },
    );
  }

  private identify(request: RequestContext, caller: RequestContext['auth'] | AuthenticationFailure): true {
    if (caller instanceof AuthenticationFailure) request.authFailure = caller;
    else request.auth = caller;
    return true;
  }
}
