import { Controller, Get } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../auth/auth.decorators';
import { ApiError, ErrorCode } from '../common/api-error';
import { HealthService, passes, type Readiness } from './health.service';

/** The routes outside the /api/v1 prefix (http-app.ts excludes them from it). */
export const PROBE_PATHS = ['healthz', 'readyz'] as const;

/**
 * Probes for an orchestrator, outside /api/v1 and outside the v1 OpenAPI
 * document (docs/decisions.md): they pass the same pipeline as every route,
 * public like the banner (no key, not rate limited).
 */
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  /** Liveness: the process answers HTTP. Nothing else is checked, so a database outage never restarts it. */
  @Get('healthz')
  @Public()
  liveness(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * Readiness: 200 with every check (and `degraded` naming the dependencies
   * it serves without that fail now), or 503 `service_unavailable` naming
   * the failing ones and why (an error code, never a message).
   */
  @Get('readyz')
  @Public()
  async readiness(): Promise<{ status: 'ready'; checks: Readiness['checks']; degraded?: string[] }> {
    const { ready, checks, degraded } = await this.health.readiness();
    if (ready) return degraded.length > 0 ? { status: 'ready', checks, degraded } : { status: 'ready', checks };
    const failed = Object.entries(checks).filter(([, result]) => !passes(result));
    const failing = failed.map(([name]) => name);
    const reasons = failed.map(([name, result]) => `${name} (${result.replace(/^failed: /, '')})`);
    throw new ApiError(ErrorCode.ServiceUnavailable, `Not ready: ${reasons.join(', ')}.`, { failing, checks });
  }
}
