import { Inject, Injectable } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseConnection, migrationsFolder } from '../database/connection';
import { Metrics } from '../metrics/metrics';
import { RATE_LIMIT_STORAGE, type RateLimitStorage } from '../rate-limit/rate-limit.storage';
import { RedisRateLimitStorage } from '../rate-limit/redis-rate-limit.storage';

/** How long a readiness check may wait for the database or Redis before it counts as failed. */
const READINESS_CHECK_TIMEOUT_MS = 1000;

type CheckResult = 'ok' | 'not_configured' | string;

export interface Readiness {
  ready: boolean;
  checks: { draining: CheckResult; database: CheckResult; migrations: CheckResult; redis: CheckResult };
  /** checks of dependencies the instance serves without, failing now: it is ready, and degraded */
  degraded: string[];
}

/** A failing check that does not make the instance unready. */
const DEGRADED = 'degraded: ';

/** A check that passes readiness: ok, not configured, or a dependency the instance serves without. */
export function passes(result: CheckResult): boolean {
  return result === 'ok' || result === 'not_configured' || result.startsWith(DEGRADED);
}

/** A check that did not answer in time (our own error: recognised by its class, never by its text). */
class NoAnswer extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswer(ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A failed check as the probe shows it: the driver's error code (a
 * PostgreSQL SQLSTATE, a socket errno), found on the error or its causes, or
 * the error's class. Never its message: a query error's message carries the
 * query text and its parameters.
 */
function describeFailure(error: unknown): string {
  if (error instanceof NoAnswer) return `failed: ${error.message}`;
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return `failed: error code ${code}`;
    current = (current as { cause?: unknown }).cause;
  }
  return `failed: ${error instanceof Error ? error.name : typeof error} (no error code)`;
}

/**
 * What an orchestrator asks before routing traffic here: only what the
 * instance cannot serve without. It is ready when it is not draining
 * (server.ts flips that on SIGTERM), the database answers within a second,
 * and every migration this build knows is applied. Redis is checked but
 * does not gate: without it the rate limiter counts in this instance's
 * memory and the API serves on, so a slow or gone Redis is reported as
 * degraded (in the body and `readiness_degraded{check="redis"}`) — a
 * balancer gated on readiness would otherwise take every instance out of
 * service over a dependency none of them needs.
 */
@Injectable()
export class HealthService {
  private draining = false;
  private readonly knownMigrations: number;

  constructor(
    private readonly connection: DatabaseConnection,
    @Inject(RATE_LIMIT_STORAGE) private readonly rateLimitStorage: RateLimitStorage,
    private readonly metrics: Metrics,
  ) {
    const journal = JSON.parse(readFileSync(join(migrationsFolder(), 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] };
    this.knownMigrations = journal.entries.length;
  }

  /** From now on the instance reports itself not ready (it keeps serving). */
  startDraining(): void {
    this.draining = true;
  }

  async readiness(): Promise<Readiness> {
    const [database, migrations, redis] = await Promise.all([this.checkDatabase(), this.checkMigrations(), this.checkRedis()]);
    const checks = { draining: this.draining ? 'failed: shutting down' : 'ok', database, migrations, redis };
    const degraded = Object.entries(checks)
      .filter(([, result]) => result.startsWith(DEGRADED))
      .map(([name]) => name);
    if (redis !== 'not_configured') this.metrics.readinessCheck('redis', degraded.includes('redis'));
    return { ready: Object.values(checks).every(passes), checks, degraded };
  }

  private async checkDatabase(): Promise<CheckResult> {
    try {
      await withTimeout(this.connection.ping(), READINESS_CHECK_TIMEOUT_MS);
      return 'ok';
    } catch (error) {
      return describeFailure(error);
    }
  }

  private async checkMigrations(): Promise<CheckResult> {
    try {
      const applied = await withTimeout(this.connection.appliedMigrations(), READINESS_CHECK_TIMEOUT_MS);
      // more than known: a newer build migrated the shared database, which stays compatible (migrations only add)
      return applied >= this.knownMigrations ? 'ok' : `failed: ${applied} of ${this.knownMigrations} migrations applied`;
    } catch (error) {
      return describeFailure(error);
    }
  }

  private async checkRedis(): Promise<CheckResult> {
    if (!(this.rateLimitStorage instanceof RedisRateLimitStorage)) return 'not_configured';
    try {
      await withTimeout(this.rateLimitStorage.ping(), READINESS_CHECK_TIMEOUT_MS);
      return 'ok';
    } catch (error) {
      // the limiter falls back to this instance's memory: served on, degraded
      return describeFailure(error).replace(/^failed: /, DEGRADED);
    }
  }
}
