import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ApiError, ErrorCode } from '../common/api-error';
import { AuthenticationFailure, requestContext, type AuthContext, type HttpRequest, type RequestStore } from '../common/request-context';
import { KeyedSlots } from './tenant-concurrency.guard';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { remainingMs } from '../database/request-scope';
import { clientKey, RateLimiter } from '../rate-limit/rate-limiter';
import { ApiKeysService } from '../auth/api-keys.service';
import { RouteAccess } from '../auth/route-access';
import { Metrics } from '../metrics/metrics';

/**
 * The second guard (registered in order in app.module.ts): who is calling.
 * Answers 401 for a missing or bad key (the rate-limit guard before it has
 * counted the request against its client address, so key guessing is
 * throttled), and 503 when the key could not be checked.
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
    private readonly metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.access.isOpen(context)) return true;
    const request = context.switchToHttp().getRequest<HttpRequest>();
    const caller = requestContext();
    if (caller.auth !== undefined || caller.authFailure !== undefined || caller.authError !== undefined) return this.answer(caller);
    // a route the request hooks did not check the key of (one closed to every key)
    const pending = this.authenticate(request, caller);
    return pending === undefined ? this.answer(caller) : pending.then(() => this.answer(caller));
  }

  /** Lets a caller with a valid key through; otherwise its 401, or the 503 of a key that could not be checked. */
  private answer(caller: RequestStore): true {
    if (caller.authError !== undefined) throw caller.authError;
    if (caller.authFailure !== undefined) {
      this.metrics.authFailure(caller.authFailure.reason);
      throw caller.authFailure;
    }
    return true;
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
