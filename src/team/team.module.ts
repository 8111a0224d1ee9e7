import { Module } from '@nestjs/common';
import { TeamController } from './team.controller';
import { MembersFixtureSection } from './team.fixtures';
import { TeamRepository } from './team.repository';
import { TeamService } from './team.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule],
  controllers: [TeamController],
  providers: [TeamRepository, TeamService, MembersFixtureSection],
})
export class TeamModule {}
