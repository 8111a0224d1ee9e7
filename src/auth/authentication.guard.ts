import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ApiError, ErrorCode } from '../common/api-error';
import { requestContext, type AuthContext, type HttpRequest, type RequestStore } from '../common/request-context';
import { KeyedSlots } from '../common/tenant-concurrency';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { remainingMs } from '../database/request-scope';
import { clientKey, RateLimiter } from '../rate-limit/rate-limiter';
import { ApiKeysService, AuthenticationFailure } from './api-keys.service';
import { RouteAccess } from './route-access';

/**
 * The first of the three access guards (registered in order in
 * app.module.ts): who is calling. Sets the request context's `auth` for a
 * valid key, or `authFailure` for a missing or bad one; it refuses nothing itself
 * (the 401 comes from the authorization guard, after the rate-limit guard
 * counted the request, so key guessing is throttled).
 *
 * The key is checked once per request, by {@link authenticate}: the HTTP
 * layer calls it before the body is read (src/http/request-hooks.ts), so
 * that only a request with a valid key has its body read; the guard then
 * reads what it found. A token this instance does not know is always looked
 * up, whatever its client's budget for wrong keys: a valid key is served
 * whatever its address spent (docs/decisions.md, "Rate limits").
 *
 * Synchronous when the key is known in memory (valid or not): Nest awaits
 * only a guard that returns a promise.
 */
@Injectable()
export class AuthenticationGuard implements CanActivate {
  /**
   * Lookups for a client whose budget for wrong keys is spent run one at a
   * time per client address: its guesses hold at most one pool connection.
   */
  private readonly spentClientLookups = new KeyedSlots(1);

  constructor(
    private readonly access: RouteAccess,
    private readonly keys: ApiKeysService,
    private readonly limiter: RateLimiter,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.access.isOpen(context)) return true;
    const request = context.switchToHttp().getRequest<HttpRequest>();
    const caller = requestContext();
    if (caller.authError !== undefined) throw caller.authError;
    if (caller.auth !== undefined || caller.authFailure !== undefined) return true;
    const pending = this.authenticate(request, caller);
    return pending === undefined ? true : pending.then(() => true);
  }

  /**
   * Who is calling: sets `auth` or `authFailure` of the request's context; a promise
   * when the key must be looked up, which rejects only when the lookup
   * cannot be made (the database, or the queue of a spent client: 503).
   */
  authenticate(request: CallerAddress, caller: RequestStore): Promise<void> | undefined {
    const authorization = request.headers.authorization;
    const known = this.keys.authenticateFromMemory(authorization);
    if (known !== undefined) return void identify(caller, known);
    // within the request's database deadline (the HTTP layer sets one around this call)
    const lookup = () =>
      this.keys.authenticate(authorization).then(
        (auth) => identify(caller, auth),
        (error: unknown) => {
          if (error instanceof AuthenticationFailure) return identify(caller, error);
          throw error;
        },
      );
    const address = request.ip ?? request.socket?.remoteAddress;
    if (this.keys.wasValidLately(authorization) || !this.limiter.isSpent(address)) return lookup();
    return this.spentClientLookups.acquire(clientKey(address), remainingMs() ?? this.config.dbStatementTimeoutMs).then((release) => {
      if (!release) throw lookupsBusy();
      return lookup().finally(release);
    });
  }
}

/** What the key check reads of the request: the key, and the client's address (the budget for wrong keys). */
type CallerAddress = Pick<HttpRequest, 'headers' | 'ip' | 'socket'>;

function identify(context: RequestStore, caller: AuthContext | AuthenticationFailure): void {
  if (caller instanceof AuthenticationFailure) context.authFailure = caller;
  else context.auth = caller;
}

/** The queue of a spent client's lookups did not move within the request's deadline: a capacity answer, like a busy tenant's. */
function lookupsBusy(): ApiError {
  return new ApiError(
    ErrorCode.ServiceUnavailable,
    'Too many API keys from this address are waiting to be checked; retry shortly.',
    undefined,
    { 'Retry-After': '1' },
  );
}
