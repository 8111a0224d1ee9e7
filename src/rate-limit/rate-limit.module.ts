import { Inject, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { LOGGER, type AppLogger } from '../common/logger';
import { Metrics } from '../metrics/metrics';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { RateLimiter } from './rate-limiter';
import { MemoryRateLimitStorage, RATE_LIMIT_STORAGE, type RateLimitStorage } from './rate-limit.storage';
import { RedisRateLimitStorage } from './redis-rate-limit.storage';

class RateLimitStorageLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(RATE_LIMIT_STORAGE) private readonly storage: MemoryRateLimitStorage | RedisRateLimitStorage,
    private readonly metrics: Metrics,
  ) {}

  async onModuleInit(): Promise<void> {
    // the Redis store is `bypassed` while its breaker counts in memory; the memory store never is
    const storage = this.storage;
    this.metrics.watchRateLimitFallback(() => storage instanceof RedisRateLimitStorage && storage.bypassed);
    if (this.storage instanceof RedisRateLimitStorage) await this.storage.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.storage.close();
  }
}

/**
 * The rate limiter; counters in Redis when REDIS_URL is set (shared by every
 * instance), otherwise in memory. Its guard is src/guards/rate-limit.guard.ts.
 */
@Module({
  providers: [
    {
      provide: RATE_LIMIT_STORAGE,
      inject: [APP_CONFIG, LOGGER, Metrics],
      useFactory: (config: AppConfig, logger: AppLogger, metrics: Metrics): RateLimitStorage =>
        config.redisUrl
          ? new RedisRateLimitStorage(config.redisUrl, logger, config.rateLimitRedisWaitMs, (reason) => metrics.rateLimitLocalDecision(reason))
          : new MemoryRateLimitStorage(),
    },
    RateLimitStorageLifecycle,
    RateLimiter,
  ],
  exports: [RATE_LIMIT_STORAGE, RateLimiter],
})
export class RateLimitModule {}
