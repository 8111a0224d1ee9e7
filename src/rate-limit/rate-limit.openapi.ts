import type { OpenAPIObject } from '@nestjs/swagger';
import { RATE_LIMIT_HEADERS } from './rate-limit.guard';

type Operation = { responses?: Record<string, { headers?: Record<string, unknown> }> };

const HEADERS = {
  [RATE_LIMIT_HEADERS.limit]: { schema: { type: 'integer' }, description: 'Requests allowed in the more constraining window (per minute or per hour).' },
  [RATE_LIMIT_HEADERS.remaining]: { schema: { type: 'integer' }, description: 'Requests left in that window.' },
  [RATE_LIMIT_HEADERS.reset]: { schema: { type: 'integer' }, description: 'Unix epoch seconds at which that window resets.' },
};

/**
 * Every response of every operation carries the rate-limit headers (the
 * limiter answers before anything else), so they are added to all of them
 * here rather than by a decorator on each endpoint.
 */
export function documentRateLimits(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const value of Object.values(pathItem)) {
      if (!value || typeof value !== 'object' || !('responses' in value)) continue;
      for (const response of Object.values((value as Operation).responses ?? {})) {
        response.headers = { ...(response.headers ?? {}), ...HEADERS };
      }
    }
  }
}
