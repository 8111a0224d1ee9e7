import { Module } from '@nestjs/common';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { AuthenticationGuard } from './authentication.guard';
import { AuthorizationGuard } from './authorization.guard';
import { RateLimitGuard, RateLimitHeaders } from './rate-limit.guard';
import { TenantConcurrencyGuard } from './tenant-concurrency.guard';

/**
 * The four guards every route passes, in the order app.module.ts registers
 * them; each answers its own refusal (429, 401, 403, 503).
 */
@Module({
  imports: [RateLimitModule],
  providers: [RateLimitGuard, RateLimitHeaders, AuthenticationGuard, AuthorizationGuard, TenantConcurrencyGuard],
  exports: [RateLimitGuard, AuthenticationGuard, AuthorizationGuard, TenantConcurrencyGuard],
})
export class GuardsModule {}
