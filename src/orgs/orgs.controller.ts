import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import { ApiEnvelope } from '../common/openapi';
import type { AuthContext } from '../common/request-context';
import { OrgDto } from './orgs.dto';
import { OrgsService } from './orgs.service';

@ApiTags('Organization')
@Controller('org')
export class OrgsController {
  constructor(private readonly orgs: OrgsService) {}

  @Get()
  @RequireScope('org:read')
  @ApiOperation({ operationId: 'getOrg', summary: 'The organization of the calling key' })
  @ApiEnvelope(OrgDto)
  getOrg(@Auth() auth: AuthContext): Promise<OrgDto> {
    return this.orgs.getOrg(auth.orgId);
  }
}
