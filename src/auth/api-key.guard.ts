import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiError, ErrorCode } from '../common/api-error';
import type { AuthContext, RequestContext } from '../common/request-context';
import { ApiKeysService } from './api-keys.service';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from './auth.decorators';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * May this caller use an endpoint that needs `scope` with this method?
 * Throws 403 `insufficient_scope` or `org_inactive`. Shared by the guard and
 * the hot-route dispatcher, which must answer exactly as the guard does.
 */
export function authorize(auth: AuthContext, scope: string | undefined, method: string | undefined): void {
  if (!scope || !auth.scopes.has(scope)) {
    throw new ApiError(
      ErrorCode.InsufficientScope,
      scope ? `This endpoint needs the ${scope} scope.` : 'This endpoint is not available to API keys.',
    );
  }
  // operations.md: past_due and suspended forbid writes; suspended forbids reads too
  const isRead = READ_METHODS.has(method ?? 'GET');
  if (auth.orgStatus === 'suspended' || (auth.orgStatus === 'past_due' && !isRead)) {
    throw new ApiError(
      ErrorCode.OrgInactive,
      auth.orgStatus === 'suspended' ? 'The organization is suspended.' : 'The organization is past due; writes are disabled.',
    );
  }
}

/**
 * Global guard: every route is either `@Public()` or declares the one scope
 * it needs with `@RequireScope()`. A route that declares neither is closed.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;

    const request = context.switchToHttp().getRequest<RequestContext>();
    // RateLimitGuard (registered first) has already authenticated a valid key on this request
    const auth = request.auth ?? (await this.keys.authenticate(request.headers.authorization));
    request.auth = auth;

    authorize(auth, this.reflector.getAllAndOverride<string | undefined>(REQUIRED_SCOPE, targets), request.method);
    return true;
  }
}
