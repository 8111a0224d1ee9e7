import { resolveTraceId } from '../libs/trace-context/trace-context';
import { Metrics } from '../src/metrics/metrics';

/**
 * The per-request work metrics and tracing add, measured in-process as CPU
 * time per request (`node dist/bench/metrics-overhead.js` after
 * `npm run bench`'s build): what one request records — its trace id, its
 * rate-limit decision, its HTTP counter and histogram — on 30 route label
 * sets, with metrics on and off. A loaded machine slows both alike, which
 * the whole-service bench cannot promise.
 */
const N = 1_000_000;
const ROUTES = Array.from({ length: 30 }, (_, i) => `/api/v1/resource${i}/:id`);
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function perRequestUs(metrics: Metrics): number {
  const started = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    resolveTraceId(i % 2 === 0 ? TRACEPARENT : undefined);
    metrics.rateLimitDecision('allowed');
    metrics.observeRequest('GET', ROUTES[i % ROUTES.length], i % 50 === 0 ? 404 : 200, 0.0012 + (i % 7) * 0.0003);
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / N;
}

for (const round of [1, 2, 3]) {
  const off = perRequestUs(new Metrics(false));
  const on = perRequestUs(new Metrics(true));
  console.log(`round ${round}: metrics off ${off.toFixed(3)} µs/request, on ${on.toFixed(3)} µs/request (recording adds ${(on - off).toFixed(3)} µs)`);
}
