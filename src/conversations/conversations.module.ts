import { Module } from '@nestjs/common';
import { ConversationsController } from './conversations.controller';
import { ConversationsFixtureSection } from './conversations.fixtures';
import { ConversationsRepository } from './conversations.repository';
import { ConversationsService } from './conversations.service';
import { FixtureRegistryModule } from '../fixtures/fixture-registry.module';

@Module({
  imports: [FixtureRegistryModule],
  controllers: [ConversationsController],
  providers: [ConversationsRepository, ConversationsService, ConversationsFixtureSection],
  exports: [ConversationsRepository],
})
export class ConversationsModule {}
