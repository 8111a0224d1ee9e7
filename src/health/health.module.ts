import { Module } from '@nestjs/common';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { HealthController } from './health.controller';
import { HealthService } from './health.service';

@Module({
  imports: [RateLimitModule],
  controllers: [HealthController],
  providers: [HealthService],
  exports: [HealthService],
})
export class HealthModule {}
