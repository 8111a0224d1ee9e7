import { expectPromtoolAccepts, parseExposition, sampleValue } from '../../test/support/prometheus';
import { Metrics } from './metrics';

describe('Metrics', () => {
  test('every series of a closed label set exists at 0 from the start; the exposition parses and promtool accepts it', async () => {
    const metrics = new Metrics(true);
    metrics.watchDatabasePool(() => ({ total: 4, idle: 1, waiting: 2, max: 10 }));
    metrics.watchRateLimitFallback(() => true);
    const text = await metrics.render();
    const exposition = parseExposition(text);
    for (const reason of ['missing', 'malformed', 'unknown', 'revoked', 'expired']) {
      expect(exposition.samples).toContainEqual({ name: 'auth_failures_total', labels: { reason }, value: 0 });
    }
    for (const outcome of ['executed', 'replayed', 'conflict']) {
      expect(exposition.samples).toContainEqual({ name: 'idempotency_requests_total', labels: { outcome }, value: 0 });
    }
    expect(sampleValue(exposition, 'db_pool_connections_in_use')).toBe(3);
    expect(sampleValue(exposition, 'db_pool_connections_idle')).toBe(1);
    expect(sampleValue(exposition, 'db_pool_requests_waiting')).toBe(2);
    expect(sampleValue(exposition, 'db_pool_connections_max')).toBe(10);
    expect(sampleValue(exposition, 'rate_limit_redis_fallback_active')).toBe(1);
    // prom-client's default process and Node.js metrics
    expect(exposition.types.get('process_cpu_seconds_total')).toBe('counter');
    expect(exposition.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    expectPromtoolAccepts(text);
  });

  test('HTTP series by method, route template and status; unknown methods are one label', async () => {
    const metrics = new Metrics(true);
    metrics.observeRequest('GET', '/api/v1/agents/:id', 200, 0.002);
    metrics.observeRequest('GET', '/api/v1/agents/:id', 200, 0.004);
    metrics.observeRequest('PROPFIND', 'unmatched', 404, 0.001);
    const exposition = parseExposition(await metrics.render());
    const labels = { method: 'GET', route: '/api/v1/agents/:id', status: '200' };
    expect(sampleValue(exposition, 'http_requests_total', labels)).toBe(2);
    expect(sampleValue(exposition, 'http_request_duration_seconds_count', labels)).toBe(2);
    expect(sampleValue(exposition, 'http_request_duration_seconds_sum', labels)).toBeCloseTo(0.006);
    expect(sampleValue(exposition, 'http_request_duration_seconds_bucket', { ...labels, le: '0.0025' })).toBe(1);
    expect(sampleValue(exposition, 'http_requests_total', { method: 'other', route: 'unmatched', status: '404' })).toBe(1);
  });

  test('a scheduled job has its series from the start; a run records its outcome, rows, duration and last success', async () => {
    const metrics = new Metrics(true);
    metrics.jobScheduled('agents-trash-purge');
    const job = { job_name: 'agents-trash-purge' };
    let exposition = parseExposition(await metrics.render());
    expect(sampleValue(exposition, 'job_runs_total', { ...job, outcome: 'success' })).toBe(0);
    expect(exposition.samples).toContainEqual({ name: 'job_last_success_timestamp_seconds', labels: job, value: 0 });

    const before = Date.now() / 1000;
    metrics.jobRun({ job: 'agents-trash-purge', outcome: 'ok', duration_ms: 1500, rows_removed: 7 });
    metrics.jobRun({ job: 'agents-trash-purge', outcome: 'failed', duration_ms: 20, rows_removed: 0 });
    metrics.jobRun({ job: 'agents-trash-purge', outcome: 'still-running', duration_ms: 0, rows_removed: 0 });
    exposition = parseExposition(await metrics.render());
    expect(sampleValue(exposition, 'job_runs_total', { ...job, outcome: 'success' })).toBe(1);
    expect(sampleValue(exposition, 'job_runs_total', { ...job, outcome: 'failure' })).toBe(1);
    expect(sampleValue(exposition, 'job_runs_total', { ...job, outcome: 'skipped' })).toBe(1);
    expect(sampleValue(exposition, 'job_rows_removed_total', job)).toBe(7);
    expect(sampleValue(exposition, 'job_duration_seconds_count', job)).toBe(2);
    expect(sampleValue(exposition, 'job_duration_seconds_sum', job)).toBeCloseTo(1.52);
    expect(sampleValue(exposition, 'job_last_success_timestamp_seconds', job)).toBeGreaterThanOrEqual(Math.floor(before));
    expect(sampleValue(exposition, 'job_batches_total', job)).toBe(0);

    // a batched job's run: its batches add up, its longest batch is the last run's
    metrics.jobRun({ job: 'agents-trash-purge', outcome: 'ok', duration_ms: 900, rows_removed: 1500, batches: 3, longest_batch_ms: 250 });
    metrics.jobRun({ job: 'agents-trash-purge', outcome: 'ok', duration_ms: 100, rows_removed: 10, batches: 1, longest_batch_ms: 40 });
    exposition = parseExposition(await metrics.render());
    expect(sampleValue(exposition, 'job_batches_total', job)).toBe(4);
    expect(sampleValue(exposition, 'job_rows_removed_total', job)).toBe(1517);
    expect(sampleValue(exposition, 'job_last_run_longest_batch_seconds', job)).toBeCloseTo(0.04);
  });

  test('disabled, it records nothing and collects no default metrics', async () => {
    const metrics = new Metrics(false);
    metrics.observeRequest('GET', '/api/v1/org', 200, 0.001);
    metrics.authFailure('missing');
    metrics.rateLimitDecision('limited');
    metrics.queryError({ code: '23505' });
    metrics.jobScheduled('idempotency-purge');
    metrics.jobRun({ job: 'idempotency-purge', outcome: 'ok', duration_ms: 5, rows_removed: 3 });
    const exposition = parseExposition(await metrics.render());
    expect(exposition.samples.filter((s) => s.value !== 0)).toEqual([]);
    expect(exposition.types.has('process_cpu_seconds_total')).toBe(false);
  });
});
