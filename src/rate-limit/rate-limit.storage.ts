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

export const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

/**
 * Every window of a budget is checked and counted in one atomic step, so a
 * hit is either counted in all windows or refused in all. A storage that
 * decides in process answers at once (no promise: the rate-limit guard then
 * stays synchronous, and Nest does not await it).
 */
export interface RateLimitStorage {
  hit(tracker: string, windows: RateWindow[]): RateLimitHit | Promise<RateLimitHit>;
}

interface WindowCounter {
  hits: number;
  resetAt: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * In-process counters: one small record per tracker and window, no timer per
 * hit (a timer per hit would grow without bound under load). Ended windows are swept
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

  // synchronous: atomic within the process
  hit(tracker: string, windows: RateWindow[]): RateLimitHit {
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

  sweep(): void {
    const now = this.now();
    for (const [id, counter] of this.counters) if (counter.resetAt <= now) this.counters.delete(id);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
