import { Global, Module } from '@nestjs/common';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { ApiKeysFixtureSection } from './api-keys.fixtures';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { AuthenticationGuard } from './authentication.guard';
import { AuthorizationGuard } from './authorization.guard';
import { RouteAccess } from './route-access';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Global()
@Module({
  imports: [FixtureRegistryModule, RateLimitModule],
  providers: [ApiKeysRepository, ApiKeysService, RouteAccess, AuthenticationGuard, AuthorizationGuard, ApiKeysFixtureSection],
  exports: [ApiKeysService, RouteAccess, AuthenticationGuard, AuthorizationGuard],
})
export class AuthModule {}
