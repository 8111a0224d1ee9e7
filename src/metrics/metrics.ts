import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AuthFailureReason } from '../common/request-context';
import type { ScheduledJobRun } from '../common/scheduled-jobs';
import { sqlstateClass } from '../database/database-errors';

type IdempotencyOutcome = 'executed' | 'replayed' | 'conflict';
type RateLimitDecision = 'allowed' | 'limited';
/** Why a request was decided from this instance's memory: Redis did not answer in time, its command failed, or the breaker is open. */
export type LocalDecisionReason = 'no_answer' | 'error' | 'bypassed';
const AUTH_FAILURE_REASONS: readonly AuthFailureReason[] = ['missing', 'malformed', 'unknown', 'revoked', 'expired'];
const IDEMPOTENCY_OUTCOMES: readonly IdempotencyOutcome[] = ['executed', 'replayed', 'conflict'];
const RATE_LIMIT_DECISIONS: readonly RateLimitDecision[] = ['allowed', 'limited'];
const RATE_LIMIT_LOCAL_REASONS: readonly LocalDecisionReason[] = ['no_answer', 'error', 'bypassed'];

/** The route label of a request no route matched (404s, paths outside the API prefix). */
export const UNMATCHED_ROUTE = 'unmatched';

interface PoolStats {
  /** connections open, busy or idle */
  total: number;
  idle: number;
  /** requests queued for a connection */
  waiting: number;
  max: number;
}

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
// point reads take about a millisecond: finer buckets at the low end than prom-client's default
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_OUTCOMES: Record<ScheduledJobRun['outcome'], string> = { ok: 'success', failed: 'failure', 'still-running': 'skipped' };
// a request waits for its rate-limit count at most RATE_LIMIT_REDIS_WAIT_MS (25 ms): buckets around it
const RATE_LIMIT_STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900];

interface HttpSeries {
  requests: Counter.Internal;
  duration: Histogram.Internal<string>;
}

/**
 * Every metric of the service, in one registry per application (tests run
 * several apps in one process). Label values come from closed sets only —
 * method, route template, status, reason, outcome, job, SQLSTATE class —
 * so no request can add a series.
 *
 * Disabled (no METRICS_PORT) every recording call returns at once: nothing
 * is collected that nobody can read.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly httpSeries = new Map<string, HttpSeries>();
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly authFailures: Counter<'reason'>;
  private readonly idempotencyOutcomes: Counter<'outcome'>;
  private readonly rateLimitDecisions: Counter<'decision'>;
  private readonly rateLimitStoreWaits: Histogram;
  private readonly rateLimitLocal: Counter<'reason'>;
  private readonly readinessDegraded: Gauge<'check'>;
  private readonly queryErrors: Counter<'sqlstate_class'>;
  // `job_name`, not `job`: Prometheus gives every scraped series the target's `job` label
  private readonly jobRuns: Counter<'job_name' | 'outcome'>;
  private readonly jobRowsRemoved: Counter<'job_name'>;
  private readonly jobBatches: Counter<'job_name'>;
  private readonly jobLongestBatch: Gauge<'job_name'>;
  private readonly jobDuration: Histogram<'job_name'>;
  private readonly jobLastSuccess: Gauge<'job_name'>;
  private readonly tenantBusyAnswers: Counter<'bound'>;
  private readonly tenantQueueDeadlines: Counter;

  constructor(readonly enabled: boolean) {
    const registers = [this.registry];
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP responses sent, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from the request reaching the service to its response being sent, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.authFailures = new Counter({
      name: 'auth_failures_total',
      help: 'Requests refused 401 by API-key authentication, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.idempotencyOutcomes = new Counter({
      name: 'idempotency_requests_total',
      help: 'Requests with an Idempotency-Key, by outcome: executed, replayed, or refused as a conflicting reuse.',
      labelNames: ['outcome'],
      registers,
    });
    this.rateLimitDecisions = new Counter({
      name: 'rate_limit_decisions_total',
      help: 'Rate-limit checks, by decision.',
      labelNames: ['decision'],
      registers,
    });
    this.rateLimitStoreWaits = new Histogram({
      name: 'rate_limit_store_wait_seconds',
      help: 'How long each request waited for its rate-limit count (Redis, or memory while Redis is bypassed).',
      registers,
      buckets: RATE_LIMIT_STORE_BUCKETS,
    });
    this.rateLimitLocal = new Counter({
      name: 'rate_limit_local_decisions_total',
      help: "Rate-limit checks decided from this instance's memory instead of the count shared in Redis, by reason: no_answer (Redis answered nothing within RATE_LIMIT_REDIS_WAIT_MS), error (the command failed), bypassed (the breaker is open).",
      labelNames: ['reason'],
      registers,
    });
    this.readinessDegraded = new Gauge({
      name: 'readiness_degraded',
      help: 'At the last readiness check, 1 for a dependency the instance serves without (it is then degraded, still ready), else 0; by check.',
      labelNames: ['check'],
      registers,
    });
    this.queryErrors = new Counter({
      name: 'db_query_errors_total',
      help: 'Failed database queries, by SQLSTATE class ("none": driver errors without one, e.g. connection lost or client timeout).',
      labelNames: ['sqlstate_class'],
      registers,
    });
    this.jobRuns = new Counter({
      name: 'job_runs_total',
      help: 'Scheduled job runs, by job and outcome (skipped: the previous run was still going).',
      labelNames: ['job_name', 'outcome'],
      registers,
    });
    this.jobRowsRemoved = new Counter({
      name: 'job_rows_removed_total',
      help: 'Rows deleted by scheduled jobs, by job.',
      labelNames: ['job_name'],
      registers,
    });
    this.jobBatches = new Counter({
      name: 'job_batches_total',
      help: 'Batches (one transaction each) worked by scheduled jobs that work in batches, by job.',
      labelNames: ['job_name'],
      registers,
    });
    this.jobLongestBatch = new Gauge({
      name: 'job_last_run_longest_batch_seconds',
      help: 'The longest batch transaction of the last successful run of a batched job (how long it held row locks at most), by job.',
      labelNames: ['job_name'],
      registers,
    });
    this.jobDuration = new Histogram({
      name: 'job_duration_seconds',
      help: 'Duration of scheduled job runs that ran, by job.',
      labelNames: ['job_name'],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.jobLastSuccess = new Gauge({
      name: 'job_last_success_timestamp_seconds',
      help: 'Unix time of the last successful run of a scheduled job in this process (0: none yet).',
      labelNames: ['job_name'],
      registers,
    });
    this.tenantBusyAnswers = new Counter({
      name: 'tenant_concurrency_rejections_total',
      help: 'Requests answered 503 because their organization or key had its limit of requests in progress for their whole wait, by bound.',
      labelNames: ['bound'],
      registers,
    });
    this.tenantQueueDeadlines = new Counter({
      name: 'tenant_queue_deadline_answers_total',
      help: "Requests answered 503 because their database deadline passed after most of it went waiting in their own tenant's queue (not a database fault).",
      registers,
    });
    if (!enabled) return;
    for (const bound of ['organization', 'key']) this.tenantBusyAnswers.inc({ bound }, 0);
    // every closed-set series exists from the start, at 0, so that rate() and alerts see the first event
    for (const reason of AUTH_FAILURE_REASONS) this.authFailures.inc({ reason }, 0);
    for (const outcome of IDEMPOTENCY_OUTCOMES) this.idempotencyOutcomes.inc({ outcome }, 0);
    for (const decision of RATE_LIMIT_DECISIONS) this.rateLimitDecisions.inc({ decision }, 0);
    for (const reason of RATE_LIMIT_LOCAL_REASONS) this.rateLimitLocal.inc({ reason }, 0);
    collectDefaultMetrics({ register: this.registry });
  }

  /** One finished HTTP response. `route` is the matched route template, or {@link UNMATCHED_ROUTE}. */
  observeRequest(method: string | undefined, route: string, status: number, seconds: number): void {
    if (!this.enabled) return;
    const label = method !== undefined && HTTP_METHODS.has(method) ? method : 'other';
    const key = `${label} ${status} ${route}`;
    let series = this.httpSeries.get(key);
    if (!series) {
      // prom-client hashes the label set on every call; the children are resolved once per series
      const labels = { method: label, route, status: String(status) };
      series = { requests: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      this.httpSeries.set(key, series);
    }
    series.requests.inc();
    series.duration.observe(seconds);
  }

  authFailure(reason: AuthFailureReason): void {
    if (this.enabled) this.authFailures.inc({ reason });
  }

  idempotencyOutcome(outcome: IdempotencyOutcome): void {
    if (this.enabled) this.idempotencyOutcomes.inc({ outcome });
  }

  /** One rate-limit check (the 429 of a client already known to be over its budget included). */
  rateLimitDecision(decision: RateLimitDecision): void {
    if (this.enabled) this.rateLimitDecisions.inc({ decision });
  }

  /** How long one rate-limit count took, from the request's side. */
  rateLimitStoreWait(seconds: number): void {
    if (this.enabled) this.rateLimitStoreWaits.observe(seconds);
  }

  /** One rate-limit check decided from this instance's memory although Redis is configured. */
  rateLimitLocalDecision(reason: LocalDecisionReason): void {
    if (this.enabled) this.rateLimitLocal.inc({ reason });
  }

  /** The result of one readiness check of a dependency the instance can serve without. */
  readinessCheck(check: 'redis', degraded: boolean): void {
    if (this.enabled) this.readinessDegraded.set({ check }, degraded ? 1 : 0);
  }

  tenantQueueDeadline(): void {
    if (this.enabled) this.tenantQueueDeadlines.inc();
  }

  tenantBusy(bound: 'organization' | 'key'): void {
    if (this.enabled) this.tenantBusyAnswers.inc({ bound });
  }

  queryError(error: unknown): void {
    if (this.enabled) this.queryErrors.inc({ sqlstate_class: sqlstateClass(error) });
  }

  /** A job was scheduled in this process: its series exist from now on, at 0, so an alert on a job that never succeeds can fire. */
  jobScheduled(job: string): void {
    if (!this.enabled) return;
    for (const outcome of Object.values(JOB_OUTCOMES)) this.jobRuns.inc({ job_name: job, outcome }, 0);
    this.jobRowsRemoved.inc({ job_name: job }, 0);
    this.jobBatches.inc({ job_name: job }, 0);
    this.jobDuration.zero({ job_name: job });
    this.jobLastSuccess.set({ job_name: job }, 0);
  }

  /** One run of a scheduled job (a run skipped because the previous one was still going has no duration). */
  jobRun(run: ScheduledJobRun): void {
    if (!this.enabled) return;
    const labels = { job_name: run.job };
    this.jobRuns.inc({ ...labels, outcome: JOB_OUTCOMES[run.outcome] });
    if (run.outcome === 'still-running') return;
    this.jobDuration.observe(labels, run.duration_ms / 1000);
    if (run.outcome !== 'ok') return;
    this.jobRowsRemoved.inc(labels, run.rows_removed);
    if (run.batches !== undefined) this.jobBatches.inc(labels, run.batches);
    if (run.longest_batch_ms !== undefined) this.jobLongestBatch.set(labels, run.longest_batch_ms / 1000);
    this.jobLastSuccess.set(labels, Date.now() / 1000);
  }

  /** Pool gauges read from `stats` at each scrape (PostgreSQL server only: the embedded engine has no pool). */
  watchDatabasePool(stats: () => PoolStats): void {
    if (!this.enabled) return;
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: (s: PoolStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read(stats()));
        },
      });
    gauge('db_pool_connections_in_use', 'Database connections checked out of the pool.', (s) => s.total - s.idle);
    gauge('db_pool_connections_idle', 'Open database connections idle in the pool.', (s) => s.idle);
    gauge('db_pool_requests_waiting', 'Queries waiting for a database connection.', (s) => s.waiting);
    gauge('db_pool_connections_max', 'Size limit of the database pool (DB_POOL_MAX).', (s) => s.max);
  }

  /**
   * 1 while rate limits are counted in this instance's memory because Redis
   * is unavailable (the store's breaker is open), read at each scrape.
   */
  watchRateLimitFallback(active: () => boolean): void {
    if (!this.enabled) return;
    new Gauge({
      name: 'rate_limit_redis_fallback_active',
      help: "1 while rate limits are counted in this instance's memory because Redis is unavailable, else 0.",
      registers: [this.registry],
      collect() {
        this.set(active() ? 1 : 0);
      },
    });
  }

  /** The exposition, Prometheus text format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
