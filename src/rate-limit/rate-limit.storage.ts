import type { ThrottlerStorage } from '@nestjs/throttler';

/** One fixed window of a budget: at most `limit` hits per `ttlMs`, counted from the window's first hit. */
export interface RateWindow {
  name: string;
  ttlMs: number;
  limit: number;
}

export interface WindowUsage extends RateWindow {
  /** hits counted in the current window, this one included when allowed */
  hits: number;
  /** milliseconds until the current window ends */
  resetsInMs: number;
}

export interface RateLimitHit {
  /** false when any window is full; a refused hit is not counted in any window */
  allowed: boolean;
  windows: WindowUsage[];
}

/** What @nestjs/throttler's storage interface returns for one hit. */
export type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

export const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

/**
 * Every window of a budget is checked and counted in one atomic step, so a
 * hit is either counted in all windows or refused in all. Also a plain
 * @nestjs/throttler storage (one window per call).
 */
export interface RateLimitStorage extends ThrottlerStorage {
  hit(tracker: string, windows: RateWindow[]): Promise<RateLimitHit>;
}

/** `ThrottlerStorage.increment` on top of `hit`, shared by both storages. */
export async function incrementOneWindow(
  storage: RateLimitStorage,
  key: string,
  ttl: number,
  limit: number,
  name: string,
): Promise<ThrottlerStorageRecord> {
  const { allowed, windows } = await storage.hit(key, [{ name, ttlMs: ttl, limit }]);
  const seconds = Math.ceil(windows[0].resetsInMs / 1000);
  return { totalHits: allowed ? windows[0].hits : windows[0].hits + 1, timeToExpire: seconds, isBlocked: !allowed, timeToBlockExpire: allowed ? 0 : seconds };
}

interface WindowCounter {
  hits: number;
  resetAt: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * In-process counters: one small record per tracker and window, no timer per
 * hit (the trap of @nestjs/throttler's default storage, which keeps a timeout
 * for every hit and grows without bound under load). Ended windows are swept
 * once a minute by one shared timer.
 */
export class MemoryRateLimitStorage implements RateLimitStorage {
  private readonly counters = new Map<string, WindowCounter>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  /** number of live window counters (tests: memory stays fixed per tracker) */
  get size(): number {
    return this.counters.size;
  }

  // synchronous inside: atomic within the process
  async hit(tracker: string, windows: RateWindow[]): Promise<RateLimitHit> {
    const now = this.now();
    const current = windows.map((window) => {
      const id = `${tracker}|${window.name}|${window.ttlMs}`;
      let counter = this.counters.get(id);
      if (!counter || counter.resetAt <= now) {
        counter = { hits: 0, resetAt: now + window.ttlMs };
        this.counters.set(id, counter);
      }
      return { window, counter };
    });
    const allowed = current.every(({ window, counter }) => counter.hits < window.limit);
    if (allowed) for (const { counter } of current) counter.hits += 1;
    return {
      allowed,
      windows: current.map(({ window, counter }) => ({ ...window, hits: counter.hits, resetsInMs: counter.resetAt - now })),
    };
  }

  increment(key: string, ttl: number, limit: number, _blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    return incrementOneWindow(this, key, ttl, limit, throttlerName);
  }

  sweep(): void {
    const now = this.now();
    for (const [id, counter] of this.counters) if (counter.resetAt <= now) this.counters.delete(id);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
