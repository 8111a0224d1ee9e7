import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { ApiError, ErrorCode } from '../common/api-error';
import type { AuthContext, RequestContext } from '../common/request-context';
import { RateLimiter, type RateDecision } from '../rate-limit/rate-limiter';
import { Metrics } from '../metrics/metrics';
import { ApiKeysService, AuthenticationFailure } from './api-keys.service';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from './auth.decorators';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * May this caller use an endpoint that needs `scope` with this method?
 * Throws 403 `insufficient_scope` or `org_inactive`.
 */
export function authorize(auth: AuthContext, scope: string | undefined, method: string | undefined): void {
  if (!scope || !auth.scopes.has(scope)) {
    throw new ApiError(
      ErrorCode.InsufficientScope,
      scope ? `This endpoint needs the ${scope} scope.` : 'This endpoint is not available to API keys.',
    );
  }
  // past_due and suspended forbid writes; suspended forbids reads too
  const isRead = READ_METHODS.has(method ?? 'GET');
  if (auth.orgStatus === 'suspended' || (auth.orgStatus === 'past_due' && !isRead)) {
    throw new ApiError(
      ErrorCode.OrgInactive,
      auth.orgStatus === 'suspended' ? 'The organization is suspended.' : 'The organization is past due; writes are disabled.',
    );
  }
}

/**
 * The one global guard: every route is either `@Public()` (no key, not rate
 * limited) or declares the one scope it needs with `@RequireScope()`; a route
 * that declares neither is closed. For the others, in this order:
 *
 *  1. authenticate: the key from memory when known (valid or not), else
 *     looked up — unless the client's budget for bad keys is already spent
 *     and the token was not a valid key lately: then 429 without a lookup,
 *     so a refused guess costs no query (docs/decisions.md)
 *  2. rate limit: the key's budget, or the client IP's for a missing or bad
 *     key (so key guessing is throttled); X-RateLimit-* headers, 429
 *  3. the 401 of a missing or bad key; then scope and organization status (403)
 */
@Injectable()
export class AuthenticationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    private readonly limiter: RateLimiter,
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: Metrics,
  ) {}

  /** handler → what its route declares (metadata never changes once the app runs) */
  private readonly routes = new WeakMap<object, { isPublic: boolean; scope: string | undefined }>();

  private routeOf(context: ExecutionContext): { isPublic: boolean; scope: string | undefined } {
    let route = this.routes.get(context.getHandler());
    if (!route) {
      const targets = [context.getHandler(), context.getClass()];
      route = {
        isPublic: this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets) === true,
        scope: this.reflector.getAllAndOverride<string | undefined>(REQUIRED_SCOPE, targets),
      };
      this.routes.set(context.getHandler(), route);
    }
    return route;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const route = this.routeOf(context);
    if (route.isPublic) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<RequestContext>();
    const response = http.getResponse<unknown>();
    const clientAddress = request.socket?.remoteAddress;

    // 1. authenticate
    let caller = this.keys.authenticateFromMemory(request.headers.authorization);
    if (caller === undefined) {
      const refused = this.keys.wasValidLately(request.headers.authorization) ? null : this.limiter.refusedClient(clientAddress);
      if (refused) this.apply(response, refused);
      // within the request's database deadline (set around the pipeline), which the handler's queries share
      caller = await this.keys.authenticate(request.headers.authorization).catch((error: unknown) => {
        if (error instanceof AuthenticationFailure) return error;
        throw error;
      });
    }
    if (!(caller instanceof AuthenticationFailure)) request.auth = caller;

    // 2. rate limit
    this.apply(response, await this.limiter.hit(caller instanceof AuthenticationFailure ? { clientAddress } : { auth: caller }));

    // 3. the key's answer, then scope and organization status
    if (caller instanceof AuthenticationFailure) {
      this.metrics.authFailure(caller.reason);
      throw caller;
    }
    authorize(caller, route.scope, request.method);
    return true;
  }

  /** Sets the rate-limit headers; throws the 429 when the budget is spent. */
  private apply(response: unknown, decision: RateDecision): void {
    this.metrics.rateLimitDecision(decision.refusal ? 'limited' : 'allowed');
    const adapter = this.adapterHost.httpAdapter;
    for (const [name, value] of Object.entries(decision.headers)) adapter.setHeader(response, name, value);
    if (decision.refusal) throw decision.refusal;
  }
}
