import { Inject, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { LOGGER, type AppLogger } from '../common/logger';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { HOUR_WINDOW, MINUTE_WINDOW, RateLimitGuard } from './rate-limit.guard';
import { MemoryRateLimitStorage, RATE_LIMIT_STORAGE, type RateLimitStorage } from './rate-limit.storage';
import { RedisRateLimitStorage } from './redis-rate-limit.storage';

class RateLimitStorageLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(RATE_LIMIT_STORAGE) private readonly storage: MemoryRateLimitStorage | RedisRateLimitStorage) {}

  async onModuleInit(): Promise<void> {
    if (this.storage instanceof RedisRateLimitStorage) await this.storage.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.storage.close();
  }
}

/** Counters in Redis when REDIS_URL is set (shared by every instance), otherwise in memory. */
@Module({
  providers: [
    {
      provide: RATE_LIMIT_STORAGE,
      inject: [APP_CONFIG, LOGGER],
      useFactory: (config: AppConfig, logger: AppLogger): RateLimitStorage =>
        config.redisUrl ? new RedisRateLimitStorage(config.redisUrl, logger) : new MemoryRateLimitStorage(),
    },
    RateLimitStorageLifecycle,
  ],
  exports: [RATE_LIMIT_STORAGE],
})
class RateLimitStorageModule {}

/** The rate-limit guard is registered in AppModule, before ApiKeyGuard (order matters). */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      imports: [RateLimitStorageModule],
      inject: [APP_CONFIG, RATE_LIMIT_STORAGE],
      useFactory: (config: AppConfig, storage: RateLimitStorage) => ({
        storage,
        throttlers: [
          // limits here are the defaults; the guard applies per-plan overrides
          { name: MINUTE_WINDOW, ttl: 60_000, limit: config.rateLimitPerMinute },
          { name: HOUR_WINDOW, ttl: 3_600_000, limit: config.rateLimitPerHour },
        ],
      }),
    }),
  ],
  providers: [RateLimitGuard],
  exports: [RateLimitGuard],
})
export class RateLimitModule {}
