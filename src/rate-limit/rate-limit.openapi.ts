import type { OpenAPIObject } from '@nestjs/swagger';
import { RATE_LIMIT_HEADERS } from './rate-limiter';

type Operation = { security?: unknown[]; responses?: Record<string, { headers?: Record<string, unknown> }> };

const HEADERS = {
  [RATE_LIMIT_HEADERS.limit]: { schema: { type: 'integer' }, description: 'Requests allowed in the more constraining window (per minute or per hour).' },
  [RATE_LIMIT_HEADERS.remaining]: { schema: { type: 'integer' }, description: 'Requests left in that window.' },
  [RATE_LIMIT_HEADERS.reset]: { schema: { type: 'integer' }, description: 'Unix epoch seconds at which that window resets.' },
};

/**
 * Every response of every authenticated operation carries the rate-limit
 * headers (the limiter answers before anything else), so they are added to
 * all of them here rather than by a decorator on each endpoint. Public
 * operations (`security: []`) are not rate limited.
 */
export function documentRateLimits(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const value of Object.values(pathItem)) {
      if (!value || typeof value !== 'object' || !('responses' in value)) continue;
      const security = (value as Operation).security;
      if (Array.isArray(security) && security.length === 0) continue;
      for (const response of Object.values((value as Operation).responses ?? {})) {
        response.headers = { ...(response.headers ?? {}), ...HEADERS };
      }
    }
  }
}
