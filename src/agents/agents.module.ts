import { Module } from '@nestjs/common';
import { OrgsModule } from '../orgs/orgs.module';
import { AgentCascadeRepository } from './agent-cascade.repository';
import { AgentReferencesRepository } from './agent-references.repository';
import { AgentsTrashRepository } from './agents-trash.repository';
import { AgentsTrashJob } from './agents-trash.job';
import { AgentsTrashService } from './agents-trash.service';
import { AgentsController } from './agents.controller';
import { AgentsFixtureSection } from './agents.fixtures';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule, OrgsModule],
  controllers: [AgentsController],
  providers: [
    AgentsRepository,
    AgentReferencesRepository,
    AgentCascadeRepository,
    AgentsTrashRepository,
    AgentsService,
    AgentsTrashService,
    AgentsTrashJob,
    AgentsFixtureSection,
  ],
  // the CLI's `trash purge` runs AgentsTrashService.purgeExpiredTrash once
  exports: [AgentsService, AgentsTrashService],
})
export class AgentsModule {}
