import { Module } from '@nestjs/common';
import { ChatbotsController } from './chatbots.controller';
import { ChatbotsFixtureSection } from './chatbots.fixtures';
import { ChatbotsRepository } from './chatbots.repository';
import { ChatbotsService } from './chatbots.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule],
  controllers: [ChatbotsController],
  providers: [ChatbotsRepository, ChatbotsService, ChatbotsFixtureSection],
})
export class ChatbotsModule {}
