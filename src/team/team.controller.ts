import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import { ApiEnvelope } from '../common/openapi';
import type { AuthContext } from '../common/request-context';
import { MemberDto } from './team.dto';
import { TeamService } from './team.service';

@ApiTags('Team')
@Controller('team')
export class TeamController {
  constructor(private readonly team: TeamService) {}

  @Get()
  @RequireScope('team:read')
  @ApiOperation({ operationId: 'listTeamMembers', summary: 'Members of the organization (not paginated)' })
  @ApiEnvelope(MemberDto, { list: true, paginated: false })
  listTeamMembers(@Auth() auth: AuthContext): Promise<MemberDto[]> {
    return this.team.listMembers(auth.orgId);
  }
}
