import { ConfigError, loadConfig, parseRateLimitPlans } from '../config/config';
import { constrainingWindow } from './rate-limiter';
import { MemoryRateLimitStorage } from './rate-limit.storage';

const MINUTE = { name: 'minute', ttlMs: 60_000, limit: 3 };
const HOUR = { name: 'hour', ttlMs: 3_600_000, limit: 5 };

describe('MemoryRateLimitStorage', () => {
  let now = 1_000_000;
  let storage: MemoryRateLimitStorage;
  beforeEach(() => {
    now = 1_000_000;
    storage = new MemoryRateLimitStorage(() => now);
  });
  afterEach(() => storage.close());

  it('counts a hit in both windows at once and refuses when either is full, without counting the refusal', async () => {
    for (let i = 0; i < 3; i++) expect((await storage.hit('k', [MINUTE, HOUR])).allowed).toBe(true);
    const refused = await storage.hit('k', [MINUTE, HOUR]);
    expect(refused.allowed).toBe(false);
    expect(refused.windows.map((w) => w.hits)).toEqual([3, 3]);
  });

  it('a window restarts when it ends, while the longer window keeps counting', async () => {
    for (let i = 0; i < 3; i++) await storage.hit('k', [MINUTE, HOUR]);
    now += 60_000;
    expect((await storage.hit('k', [MINUTE, HOUR])).allowed).toBe(true);
    expect((await storage.hit('k', [MINUTE, HOUR])).allowed).toBe(true);
    const hourFull = await storage.hit('k', [MINUTE, HOUR]);
    expect(hourFull.allowed).toBe(false);
    expect(hourFull.windows.map((w) => w.hits)).toEqual([2, 5]);
    expect(constrainingWindow(hourFull.windows).name).toBe('hour');
    expect(hourFull.windows[1].resetsInMs).toBe(3_600_000 - 60_000);
  });

  it('keeps fixed memory per tracker however many hits, and sweeps ended windows', async () => {
    for (let i = 0; i < 10_000; i++) await storage.hit('k', [{ ...MINUTE, limit: 100_000 }, { ...HOUR, limit: 100_000 }]);
    await storage.hit('other', [MINUTE]);
    expect(storage.size).toBe(3);
    now += 60_000;
    storage.sweep();
    expect(storage.size).toBe(1); // only k's hour window is still running
  });
});

describe('constrainingWindow', () => {
  it('is the window with the fewest requests left; on a tie, the one that ends last', () => {
    const minute = { ...MINUTE, limit: 10, hits: 2, resetsInMs: 30_000 };
    const hour = { ...HOUR, limit: 100, hits: 85, resetsInMs: 900_000 };
    expect(constrainingWindow([minute, hour]).name).toBe('minute');
    expect(constrainingWindow([minute, { ...hour, hits: 99 }]).name).toBe('hour');
    expect(constrainingWindow([{ ...minute, hits: 10 }, { ...hour, hits: 100 }]).name).toBe('hour');
  });
});

describe('rate-limit configuration', () => {
  it('defaults to 600 per minute and 10000 per hour, with no plan overrides', () => {
    const config = loadConfig({}, { pgliteDir: 'memory', cursorSecret: 'x'.repeat(16), encryptionKey: Buffer.alloc(32) });
    expect(config.rateLimitPerMinute).toBe(600);
    expect(config.rateLimitPerHour).toBe(10_000);
    expect(config.rateLimitPlans).toEqual({});
  });

  it('RATE_LIMIT_PLANS maps plans to per-minute/per-hour budgets', () => {
    expect(parseRateLimitPlans('free:60/1000, pro:600/10000')).toEqual({
      free: { perMinute: 60, perHour: 1000 },
      pro: { perMinute: 600, perHour: 10_000 },
    });
    expect(parseRateLimitPlans('')).toEqual({});
  });

  it.each(['free', 'free:60', 'free:60/x', 'free:0/10', 'free:100/10'])('rejects "%s" with a message naming the setting', (raw) => {
    expect(() => parseRateLimitPlans(raw)).toThrow(ConfigError);
    expect(() => parseRateLimitPlans(raw)).toThrow(/RATE_LIMIT_PLANS/);
  });
});
