import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { ApiError, ErrorCode } from '../common/api-error';
import { requestContext, type AuthContext, type HttpRequest } from '../common/request-context';
import { Metrics } from '../metrics/metrics';
import { RouteAccess } from './route-access';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * May this caller use an endpoint that needs `scope` with this method?
 * Throws 403 `insufficient_scope` or `org_inactive`.
 */
function authorize(auth: AuthContext, scope: string | undefined, method: string | undefined): void {
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
 * The last of the three access guards (app.module.ts): the 401 of a missing
 * or bad key (after the rate-limit guard counted it), then the route's scope
 * and the organization's status (403). A route that declares neither
 * `@Public()` nor `@RequireScope()` is closed to every key.
 */
@Injectable()
export class AuthorizationGuard implements CanActivate {
  constructor(
    private readonly access: RouteAccess,
    private readonly metrics: Metrics,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.access.isOpen(context)) return true;
    const request = context.switchToHttp().getRequest<HttpRequest>();
    const caller = requestContext();
    if (caller.authFailure) {
      this.metrics.authFailure(caller.authFailure.reason);
      throw caller.authFailure;
    }
    // the authentication guard always sets one of the two
    authorize(caller.auth!, this.access.of(context).scope, request.method);
    return true;
  }
}
