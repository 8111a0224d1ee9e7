import { Module } from '@nestjs/common';
import { ConnectorsController } from './connectors.controller';
import { ConnectorsFixtureSection } from './connectors.fixtures';
import { ConnectorsRepository } from './connectors.repository';
import { ConnectorsService } from './connectors.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule],
  controllers: [ConnectorsController],
  providers: [ConnectorsRepository, ConnectorsService, ConnectorsFixtureSection],
  exports: [ConnectorsRepository],
})
export class ConnectorsModule {}
