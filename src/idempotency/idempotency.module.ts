import { Module } from '@nestjs/common';
import { IdempotencyPurgeJob } from './idempotency-purge.job';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';

/** The interceptor itself is registered in AppModule, before the envelope interceptor (order matters). */
@Module({
  providers: [IdempotencyRepository, IdempotencyService, IdempotencyInterceptor, IdempotencyPurgeJob],
  exports: [IdempotencyService, IdempotencyInterceptor],
})
export class IdempotencyModule {}
