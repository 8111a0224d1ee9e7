import { Module } from '@nestjs/common';
import { OrgsModule } from '../orgs/orgs.module';
import { CustomToolsController } from './custom-tools.controller';
import { CustomToolsFixtureSection } from './custom-tools.fixtures';
import { CustomToolsRepository } from './custom-tools.repository';
import { CustomToolsService } from './custom-tools.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule, OrgsModule],
  controllers: [CustomToolsController],
  providers: [CustomToolsRepository, CustomToolsService, CustomToolsFixtureSection],
})
export class CustomToolsModule {}
