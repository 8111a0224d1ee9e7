import { Module } from '@nestjs/common';
import { OrgsController } from './orgs.controller';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

@Module({
  controllers: [OrgsController],
  providers: [OrgsRepository, OrgsService],
  // OrgsRepository: the organization-row lock that every capped create takes
  exports: [OrgsService, OrgsRepository],
})
export class OrgsModule {}
