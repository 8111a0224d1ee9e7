import { Global, Module } from '@nestjs/common';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysFixtureSection } from './api-keys.fixtures';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';

@Global()
@Module({
  providers: [ApiKeysRepository, ApiKeysService, ApiKeyGuard, ApiKeysFixtureSection],
  exports: [ApiKeysService, ApiKeyGuard],
})
export class AuthModule {}
