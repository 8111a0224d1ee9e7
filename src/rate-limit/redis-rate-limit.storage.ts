import { Redis } from 'ioredis';
import type { AppLogger } from '../common/logger';
import { MemoryRateLimitStorage, type RateLimitHit, type RateLimitStorage, type RateWindow } from './rate-limit.storage';

/**
 * One script per hit, all windows at once: read every window, refuse if any
 * is full, otherwise count the hit in all of them. Redis runs a script
 * atomically, so concurrent hits from any number of instances cannot slip
 * past the limit (the burst trap of GET-then-INCR storages). Windows start
 * at their first hit and end by key expiry (Redis's clock, not ours).
 *
 * KEYS[i]: the counter of window i; ARGV[2i-1]: its length in ms; ARGV[2i]: its limit.
 * Returns { allowed, hits1, resetsInMs1, hits2, resetsInMs2, … }.
 */
const HIT_SCRIPT = `
local n = #KEYS
local hits = {}
local ttls = {}
local allowed = 1
for i = 1, n do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl <= 0 then
    count = 0
    ttl = tonumber(ARGV[2 * i - 1])
  end
  hits[i] = count
  ttls[i] = ttl
  if count >= tonumber(ARGV[2 * i]) then allowed = 0 end
end
if allowed == 1 then
  for i = 1, n do
    if hits[i] == 0 then
      redis.call('SET', KEYS[i], 1, 'PX', ttls[i])
    else
      redis.call('INCR', KEYS[i])
    end
    hits[i] = hits[i] + 1
  end
end
local out = { allowed }
for i = 1, n do
  out[#out + 1] = hits[i]
  out[#out + 1] = ttls[i]
end
return out
`;

const CONNECT_WAIT_MS = 2000;
const WARN_EVERY_MS = 30_000;
/** a command Redis has not answered by then counts as a failure: the breaker opens */
export const REDIS_COMMAND_TIMEOUT_MS = 500;
/** while bypassed, how often a background PING asks whether Redis answers again */
const REDIS_PROBE_EVERY_MS = 1000;

type RedisWithHit = Redis & { rateLimitHit(...args: Array<string | number>): Promise<number[]> };

/**
 * Counters shared by every instance through Redis. When Redis cannot be
 * reached the limiter fails open to this instance's own memory counters
 * (documented in docs/decisions.md): the API keeps serving, each instance
 * still enforces the budget on its own, and a warning is logged.
 *
 * Redis trouble costs a request at most `waitMs` (RATE_LIMIT_REDIS_WAIT_MS,
 * 25 ms by default; Redis on the same network answers in well under a
 * millisecond), from the first request on:
 *  - a request whose count Redis has not answered within `waitMs` is decided
 *    from this instance's memory; its hit still lands in Redis when Redis
 *    answers, so a slow moment does not lose shared counts;
 *  - a breaker stops asking Redis at all once a command fails or goes
 *    unanswered for REDIS_COMMAND_TIMEOUT_MS (a frozen Redis accepts
 *    connections and never answers): hits are then counted in memory while a
 *    background PING every second probes Redis; the first answer switches
 *    back to shared counting.
 */
export class RedisRateLimitStorage implements RateLimitStorage {
  private readonly redis: RedisWithHit;
  private readonly fallback: MemoryRateLimitStorage;
  private lastWarnAt = 0;
  /** set while Redis is bypassed: the background probe */
  private probe: NodeJS.Timeout | null = null;
  private probing = false;

  constructor(
    url: string,
    private readonly logger: AppLogger,
    /** how long a request waits for Redis's count before it is decided from memory */
    private readonly waitMs: number,
    private readonly prefix = 'rl:',
  ) {
    this.fallback = new MemoryRateLimitStorage();
    this.redis = new Redis(url, {
      // fail fast instead of queueing requests behind a reconnect
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_WAIT_MS,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    }) as RedisWithHit;
    this.redis.defineCommand('rateLimitHit', { lua: HIT_SCRIPT });
    // without a listener ioredis reports every reconnect failure on stderr
    this.redis.on('error', (error: Error) => this.warn(error));
  }

  /** Start-up waits briefly for the connection, so the first requests already share counters. */
  async connect(): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, CONNECT_WAIT_MS);
      this.redis.once('ready', done);
    });
    if ((this.redis.status as string) !== 'ready') this.warn(new Error(`not connected after ${CONNECT_WAIT_MS} ms`));
  }

  /** true while hits are counted in memory because Redis failed (tests, metrics) */
  get bypassed(): boolean {
    return this.probe !== null;
  }

  async hit(tracker: string, windows: RateWindow[]): Promise<RateLimitHit> {
    if (this.probe !== null) return this.fallback.hit(tracker, windows);
    // the hash tag keeps one tracker's windows in one cluster slot
    const keys = windows.map((window) => `${this.prefix}{${tracker}}:${window.name}:${window.ttlMs}`);
    const args = windows.flatMap((window) => [window.ttlMs, window.limit]);
    const counted = this.redis.rateLimitHit(keys.length, ...keys, ...args).catch((error: unknown) => {
      this.warn(error as Error);
      this.bypass();
      return null;
    });
    const reply = await within(counted, this.waitMs);
    // failed, or not answered within the wait: this request is decided from memory
    if (!reply) return this.fallback.hit(tracker, windows);
    return {
      allowed: reply[0] === 1,
      windows: windows.map((window, i) => ({ ...window, hits: Number(reply[1 + 2 * i]), resetsInMs: Number(reply[2 + 2 * i]) })),
    };
  }

  /** Readiness (health/): rejects unless Redis answers now (no offline queue; bounded by the command timeout). */
  async ping(): Promise<void> {
    await this.redis.ping();
  }

  private bypass(): void {
    if (this.probe !== null) return;
    this.probe = setInterval(() => void this.probeOnce(), REDIS_PROBE_EVERY_MS);
    this.probe.unref();
  }

  private async probeOnce(): Promise<void> {
    if (this.probing || this.probe === null) return;
    this.probing = true;
    try {
      await this.redis.ping();
      clearInterval(this.probe);
      this.probe = null;
      this.lastWarnAt = 0;
      this.logger.info({}, 'rate-limit store (Redis) answers again: counting shared across instances');
    } catch {
      // still unavailable: keep counting in memory, probe again
    } finally {
      this.probing = false;
    }
  }

  async close(): Promise<void> {
    if (this.probe !== null) clearInterval(this.probe);
    this.probe = null;
    this.fallback.close();
    this.redis.disconnect();
  }

  private warn(error: Error): void {
    const now = Date.now();
    if (now - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = now;
    this.logger.warn(
      { err: { message: error.message } },
      'rate-limit store (Redis) unavailable: counting in this instance\'s memory until it is back',
    );
  }
}

/** The promise's value, or undefined once `ms` have passed without it. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    void promise.then((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}
