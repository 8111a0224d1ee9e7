import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';

const TAKES_KEY = 'takesKey';

/**
 * Marks a Nest route that takes an API key (`@RequireScope()` applies it),
 * through the platform's documented route config, so that the request
 * hooks, which run before Nest's guards, know to check the key before the
 * body is read (request-hooks.ts). Every other route — public, closed, the
 * API reference, an unknown path — never reads a body.
 */
export const TakesKeyRoute = () => RouteConfig({ [TAKES_KEY]: true });

/** Was the route this request matched marked with {@link TakesKeyRoute}? */
export function takesKey(request: FastifyRequest): boolean {
  const config = request.routeOptions.config as unknown as Record<string, unknown> | undefined;
  return config?.[TAKES_KEY] === true;
}
