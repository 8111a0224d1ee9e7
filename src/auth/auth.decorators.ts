import { applyDecorators, createParamDecorator, SetMetadata } from '@nestjs/common';
import { ApiExtension, ApiSecurity } from '@nestjs/swagger';
import { ApiError, ErrorCode } from '../common/api-error';
import { ApiErrors, COMMON_AUTH_ERRORS } from '../common/openapi';
import { requestContext, type AuthContext } from '../common/request-context';
import { TakesKeyRoute } from '../http/route-flags';
import type { Scope } from './scopes';

export const REQUIRED_SCOPE = 'auth:required-scope';
export const PUBLIC_ROUTE = 'auth:public';

export const BEARER_SCHEME = 'bearer';

/**
 * The one declaration an authenticated endpoint makes: the scope it needs.
 * It also documents the security requirement and the common auth errors,
 * and tells the HTTP layer to check the key before the body is read.
 */
export function RequireScope(scope: Scope) {
  return applyDecorators(
    SetMetadata(REQUIRED_SCOPE, scope),
    TakesKeyRoute(),
    ApiSecurity(BEARER_SCHEME, [scope]),
    ApiExtension('x-required-scope', scope),
    ApiErrors(...COMMON_AUTH_ERRORS),
  );
}

/** No API key needed (`GET /`, `GET /openapi.json`). */
export const Public = () => applyDecorators(SetMetadata(PUBLIC_ROUTE, true), ApiExtension('x-public', true));

/** The caller's key and organization, as the guard established them. */
export const Auth = createParamDecorator((): AuthContext => {
  const auth = requestContext().auth;
  if (!auth) throw new ApiError(ErrorCode.Unauthorized, 'A valid API key is required.');
  return auth;
});
