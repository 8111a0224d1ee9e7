import { Redis } from 'ioredis';
import type { AppLogger } from '../common/logger';
import type { LocalDecisionReason } from '../metrics/metrics';
import { MemoryRateLimitStorage, type RateLimitHit, type RateLimitStorage, type RateWindow, type WindowUsage } from './rate-limit.storage';

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
/** Redis answering nothing for this long counts as a failure: the breaker opens */
export const REDIS_COMMAND_TIMEOUT_MS = 500;
/**
 * ioredis's own timeout, only so that commands sent to a frozen Redis do not
 * pile up for ever: the breaker above is ours, because a timer of a busy
 * event loop can fire before a reply that has already arrived is read.
 */
const REDIS_CLIENT_TIMEOUT_MS = 10 * REDIS_COMMAND_TIMEOUT_MS;
/** while bypassed, how often a background PING asks whether Redis answers again */
const REDIS_PROBE_EVERY_MS = 1000;
/** trackers whose last shared count is remembered (for decisions from memory), at most */
const MAX_KNOWN_TRACKERS = 10_000;

type RedisWithHit = Redis & { rateLimitHit(...args: Array<string | number>): Promise<number[]> };

/** The last count Redis gave for a tracker, each window with the time it ends. */
type KnownWindows = Array<{ name: string; ttlMs: number; hits: number; limit: number; endsAt: number }>;

/**
 * Counters shared by every instance through Redis. When Redis cannot be
 * reached the limiter fails open to this instance's own memory counters
 * (documented in docs/decisions.md): the API keeps serving, each instance
 * still enforces the budget on its own, and a warning is logged.
 *
 * The decision is Redis's whenever Redis answers, however busy this
 * process is: a request whose count has not been read within `waitMs`
 * (RATE_LIMIT_REDIS_WAIT_MS, 25 ms by default) first lets the event loop
 * read what has arrived (a busy loop runs expired timers before it reads
 * sockets), and waits on while Redis is still answering other commands.
 * Only a Redis that has answered nothing meanwhile costs the request the
 * wait; the request is then decided from memory, never showing more
 * requests left than Redis's last count for its key, and its hit still
 * lands in Redis when Redis answers. A breaker stops asking Redis at all
 * once a command fails or Redis answers nothing for
 * REDIS_COMMAND_TIMEOUT_MS (a frozen Redis accepts connections and never
 * answers): hits are then counted in memory while a background PING every
 * second probes Redis; the first answer switches back to shared counting.
 * Every decision from memory is counted (`onLocalDecision`) and logged at
 * most every 30 s, with its reason and how many there were.
 */
export class RedisRateLimitStorage implements RateLimitStorage {
  private readonly redis: RedisWithHit;
  private readonly fallback: MemoryRateLimitStorage;
  private lastWarnAt = 0;
  /** set while Redis is bypassed: the background probe */
  private probe: NodeJS.Timeout | null = null;
  private probing = false;
  /** when Redis last answered a command (performance.now()) */
  private lastAnswerAt = -Infinity;
  /** tracker → Redis's last count for it (insertion order: the oldest goes first at the bound) */
  private readonly known = new Map<string, KnownWindows>();
  private readonly localDecisions = new Map<LocalDecisionReason, number>();
  private lastLocalLogAt = -Infinity;

  constructor(
    url: string,
    private readonly logger: AppLogger,
    /** how long a request waits for Redis's count before it is decided from memory */
    private readonly waitMs: number,
    private readonly onLocalDecision: (reason: LocalDecisionReason) => void = () => {},
    private readonly prefix = 'rl:',
  ) {
    this.fallback = new MemoryRateLimitStorage();
    this.redis = new Redis(url, {
      // fail fast instead of queueing requests behind a reconnect
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_CLIENT_TIMEOUT_MS,
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
    if (this.probe !== null) return this.local(tracker, windows, 'bypassed');
    // the hash tag keeps one tracker's windows in one cluster slot
    const keys = windows.map((window) => `${this.prefix}{${tracker}}:${window.name}:${window.ttlMs}`);
    const args = windows.flatMap((window) => [window.ttlMs, window.limit]);
    const sentAt = performance.now();
    const counted = this.redis.rateLimitHit(keys.length, ...keys, ...args).then(
      (reply) => {
        this.lastAnswerAt = performance.now();
        const usage = windows.map((window, i) => ({ ...window, hits: Number(reply[1 + 2 * i]), resetsInMs: Number(reply[2 + 2 * i]) }));
        // a late answer too: the next decision from memory starts from it
        this.remember(tracker, usage);
        return { allowed: reply[0] === 1, windows: usage } satisfies RateLimitHit;
      },
      (error: unknown) => {
        this.warn(error as Error);
        this.bypass();
        return 'error' as const;
      },
    );
    // the breaker: Redis answered nothing at all for the command timeout
    void this.answered(counted, sentAt, REDIS_COMMAND_TIMEOUT_MS).then((answer) => {
      if (answer !== undefined) return;
      this.warn(new Error(`no answer within ${REDIS_COMMAND_TIMEOUT_MS} ms`));
      this.bypass();
    });
    const answer = await this.answered(counted, sentAt, this.waitMs);
    if (answer === undefined) return this.local(tracker, windows, 'no_answer');
    if (answer === 'error') return this.local(tracker, windows, 'error');
    return answer;
  }

  /**
   * The promise's value, or undefined when Redis answered nothing for `ms`.
   * When the time is up, I/O that has already arrived is read first
   * (setImmediate runs after the event loop's poll phase; a timer of a busy
   * loop fires before it), and the wait goes on while Redis answered some
   * other command since the last look: this one is queued behind those.
   */
  private answered<T>(promise: Promise<T>, sentAt: number, ms: number): Promise<T | undefined> {
    return new Promise((resolve) => {
      let settled = false;
      let since = sentAt;
      let timer: NodeJS.Timeout;
      const look = () => {
        if (settled) return;
        if (this.lastAnswerAt > since) {
          since = performance.now();
          timer = setTimeout(() => setImmediate(look), ms);
          return;
        }
        settled = true;
        resolve(undefined);
      };
      timer = setTimeout(() => setImmediate(look), ms);
      void promise.then((value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      });
    });
  }

  /**
   * A decision from this instance's memory. Never more lenient than what
   * Redis last said for the tracker: a window Redis counted full is refused,
   * and the requests left shown are at most Redis's.
   */
  private local(tracker: string, windows: RateWindow[], reason: LocalDecisionReason): RateLimitHit {
    this.countLocal(reason);
    const now = Date.now();
    const known = this.known.get(tracker)?.filter((window) => window.endsAt > now) ?? [];
    const shared = (window: RateWindow) => known.find((k) => k.name === window.name && k.ttlMs === window.ttlMs && k.limit === window.limit);
    if (windows.some((window) => (shared(window)?.hits ?? 0) >= window.limit)) {
      return {
        allowed: false,
        windows: windows.map((window) => {
          const k = shared(window);
          return k ? { ...window, hits: k.hits, resetsInMs: k.endsAt - now } : { ...window, hits: 0, resetsInMs: window.ttlMs };
        }),
      };
    }
    const decided = this.fallback.hit(tracker, windows);
    return {
      allowed: decided.allowed,
      windows: decided.windows.map((usage) => {
        const k = shared(usage);
        return k ? { ...usage, hits: Math.min(usage.limit, Math.max(usage.hits, k.hits + (decided.allowed ? 1 : 0))) } : usage;
      }),
    };
  }

  private remember(tracker: string, usage: WindowUsage[]): void {
    const now = Date.now();
    this.known.delete(tracker);
    if (this.known.size >= MAX_KNOWN_TRACKERS) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
    this.known.set(
      tracker,
      usage.map((w) => ({ name: w.name, ttlMs: w.ttlMs, limit: w.limit, hits: w.hits, endsAt: now + w.resetsInMs })),
    );
  }

  private countLocal(reason: LocalDecisionReason): void {
    this.onLocalDecision(reason);
    this.localDecisions.set(reason, (this.localDecisions.get(reason) ?? 0) + 1);
    const now = performance.now();
    if (now - this.lastLocalLogAt < WARN_EVERY_MS) return;
    this.lastLocalLogAt = now;
    const counts = Object.fromEntries(this.localDecisions);
    this.localDecisions.clear();
    this.logger.warn(
      { reason, local_decisions: counts },
      "rate limit decided from this instance's memory, not the shared count (counts since the last such line)",
    );
  }

  /** Readiness (health/): rejects unless Redis answers now (no offline queue; bounded by the caller's timeout). */
  async ping(): Promise<void> {
    await this.redis.ping();
    this.lastAnswerAt = performance.now();
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
      await this.ping();
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
