import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AuthModule } from '../auth/auth.module';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { HotRouteDispatcher } from './hot-route.dispatcher';

/** The hot path for point reads; `configureApp` installs it on the HTTP server. */
@Module({
  imports: [DiscoveryModule, AuthModule, RateLimitModule],
  providers: [HotRouteDispatcher],
  exports: [HotRouteDispatcher],
})
export class HotRoutesModule {}
