import { Global, Module } from '@nestjs/common';
import { ApiKeysFixtureSection } from './api-keys.fixtures';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { RouteAccess } from './route-access';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Global()
@Module({
  imports: [FixtureRegistryModule],
  providers: [ApiKeysRepository, ApiKeysService, RouteAccess, ApiKeysFixtureSection],
  exports: [ApiKeysService, RouteAccess],
})
export class AuthModule {}
