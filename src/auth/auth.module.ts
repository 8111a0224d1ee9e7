import { Global, Module } from '@nestjs/common';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { ApiKeysFixtureSection } from './api-keys.fixtures';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { AuthenticationGuard } from './authentication.guard';

@Global()
@Module({
  imports: [RateLimitModule],
  providers: [ApiKeysRepository, ApiKeysService, AuthenticationGuard, ApiKeysFixtureSection],
  exports: [ApiKeysService, AuthenticationGuard],
})
export class AuthModule {}
