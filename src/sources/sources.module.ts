import { Module } from '@nestjs/common';
import { SourcesController } from './sources.controller';
import { SourcesFixtureSection } from './sources.fixtures';
import { SourcesRepository } from './sources.repository';
import { SourcesService } from './sources.service';

@Module({
  controllers: [SourcesController],
  providers: [SourcesRepository, SourcesService, SourcesFixtureSection],
})
export class SourcesModule {}
