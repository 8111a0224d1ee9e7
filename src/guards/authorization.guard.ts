import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { ApiError, ErrorCode } from '../common/api-error';
import { requestContext, type AuthContext, type HttpRequest } from '../common/request-context';
import { RouteAccess } from '../auth/route-access';

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
 * The third guard (app.module.ts): the route's scope and the organization's
 * status (403), for a caller the authentication guard let through. A route
 * that declares neither `@Public()` nor `@RequireScope()` is closed to every
 * key.
 */
@Injectable()
export class AuthorizationGuard implements CanActivate {
  constructor(private readonly access: RouteAccess) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.access.isOpen(context)) return true;
    const request = context.switchToHttp().getRequest<HttpRequest>();
    // the authentication guard before this one let only a caller with a valid key through
    authorize(requestContext().auth!, this.access.of(context).scope, request.method);
    return true;
  }
}
