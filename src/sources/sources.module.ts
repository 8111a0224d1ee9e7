import { Module } from '@nestjs/common';
import { OrgsModule } from '../orgs/orgs.module';
import { SourcesController } from './sources.controller';
import { SourcesFixtureSection } from './sources.fixtures';
import { SourcesRepository } from './sources.repository';
import { SourcesService } from './sources.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule, OrgsModule],
  controllers: [SourcesController],
  providers: [SourcesRepository, SourcesService, SourcesFixtureSection],
})
export class SourcesModule {}
