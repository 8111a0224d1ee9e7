import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import type { Page } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { PaginationQuery } from '../common/pagination';
import type { AuthContext } from '../common/request-context';
import { TriggerDto } from './triggers.dto';
import { TriggersService } from './triggers.service';
import { idPattern } from '../common/input-bounds';
import { TRIGGER_ID } from './triggers.ids';

@ApiTags('Triggers')
@Controller('triggers')
export class TriggersController {
  constructor(private readonly triggers: TriggersService) {}

  @Get()
  @RequireScope('triggers:read')
  @ApiOperation({ operationId: 'listTriggers', summary: 'Triggers (webhook, scheduled and custom automation), newest first' })
  @ApiEnvelope(TriggerDto, { list: true })
  @ApiErrors(422)
  listTriggers(@Auth() auth: AuthContext, @Query() query: PaginationQuery): Promise<Page<TriggerDto>> {
    return this.triggers.listTriggers(auth.orgId, query);
  }

  @Get(':id')
  @RequireScope('triggers:read')
  @ApiOperation({ operationId: 'getTrigger', summary: 'One trigger' })
  @ApiParam({ name: 'id', description: '`trigger_<24 hex>`', schema: { type: 'string', pattern: idPattern(TRIGGER_ID) } })
  @ApiEnvelope(TriggerDto)
  @ApiErrors(404)
  getTrigger(@Auth() auth: AuthContext, @Param('id') id: string): Promise<TriggerDto> {
    return this.triggers.getTrigger(auth.orgId, id);
  }
}
