import { Module } from '@nestjs/common';
import { TriggersController } from './triggers.controller';
import { TriggersFixtureSection } from './triggers.fixtures';
import { TriggersRepository } from './triggers.repository';
import { TriggersService } from './triggers.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule],
  controllers: [TriggersController],
  providers: [TriggersRepository, TriggersService, TriggersFixtureSection],
})
export class TriggersModule {}
