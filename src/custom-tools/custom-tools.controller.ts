import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import { DeleteAcknowledgementDto } from '../common/delete-ack.dto';
import type { Page } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { planCapDescription } from '../orgs/plan-limits';
import { PaginationQuery } from '../common/pagination';
import type { AuthContext } from '../common/request-context';
import { CustomToolCreateDto, CustomToolDto, CustomToolUpdateDto } from './custom-tools.dto';
import { CustomToolsService } from './custom-tools.service';
import { ConditionalWrites } from '../conditional/conditional.decorators';
import { idPattern } from '../common/input-bounds';

const TOOL_ID = { name: 'id', description: '`tool_<24 hex>`', schema: { type: 'string', pattern: idPattern('customTool') } } as const;
@ApiTags('Custom tools')
@Controller('custom_tools')
@ConditionalWrites(CustomToolsService)
export class CustomToolsController {
  constructor(private readonly tools: CustomToolsService) {}

  @Get()
  @RequireScope('custom_tools:read')
  @ApiOperation({ operationId: 'listCustomTools', summary: 'Custom tools, newest first' })
  @ApiEnvelope(CustomToolDto, { list: true })
  @ApiErrors(422)
  listCustomTools(@Auth() auth: AuthContext, @Query() query: PaginationQuery): Promise<Page<CustomToolDto>> {
    return this.tools.listCustomTools(auth.orgId, query);
  }

  @Post()
  @RequireScope('custom_tools:write')
  @ApiOperation({
    operationId: 'createCustomTool',
    summary: 'Create a custom tool',
    description: `\`name\` is generated from \`label\`. Credentials are encrypted at rest and never returned. ${planCapDescription('custom_tool_slots')}`,
  })
  // "Try it out" in /docs sends this as it is: a valid body with only the required fields
  @ApiBody({
    type: CustomToolCreateDto,
    examples: {
      minimal: {
        summary: 'Only the required fields',
        value: { label: 'Orders API list orders', description: 'Lists the most recent orders of the shop.', method: 'GET', url: 'https://api.example.com/orders' },
      },
    },
  })
  @ApiEnvelope(CustomToolDto, { status: 201 })
  @ApiErrors(409, 422)
  createCustomTool(@Auth() auth: AuthContext, @Body() body: CustomToolCreateDto): Promise<CustomToolDto> {
    return this.tools.createCustomTool(auth.orgId, body);
  }

  @Get(':id')
  @RequireScope('custom_tools:read')
  @ApiOperation({ operationId: 'getCustomTool', summary: 'Fetch a custom tool' })
  @ApiParam(TOOL_ID)
  @ApiEnvelope(CustomToolDto)
  @ApiErrors(404)
  getCustomTool(@Auth() auth: AuthContext, @Param('id') id: string): Promise<CustomToolDto> {
    return this.tools.getCustomTool(auth.orgId, id);
  }

  @Patch(':id')
  @RequireScope('custom_tools:write')
  @ApiOperation({
    operationId: 'updateCustomTool',
    summary: 'Update a custom tool',
    description: 'Omitted fields are unchanged; `name` cannot be changed. Sending `auth.credentials` rotates them; omitting them keeps them.',
  })
  @ApiParam(TOOL_ID)
  @ApiBody({ type: CustomToolUpdateDto, examples: { oneField: { summary: 'One field; the others stay as they are', value: { description: 'Lists all recent orders of the shop.' } } } })
  @ApiEnvelope(CustomToolDto)
  @ApiErrors(404, 409, 422)
  updateCustomTool(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: CustomToolUpdateDto): Promise<CustomToolDto> {
    return this.tools.updateCustomTool(auth.orgId, id, body);
  }

  @Delete(':id')
  @HttpCode(200)
  @RequireScope('custom_tools:delete')
  @ApiOperation({
    operationId: 'deleteCustomTool',
    summary: 'Delete a custom tool (hard delete)',
    description: 'No trash. The tool is also removed from every agent\'s `tools` array in the organization.',
  })
  @ApiParam(TOOL_ID)
  @ApiEnvelope(DeleteAcknowledgementDto)
  @ApiErrors(404)
  deleteCustomTool(@Auth() auth: AuthContext, @Param('id') id: string): Promise<DeleteAcknowledgementDto> {
    return this.tools.deleteCustomTool(auth.orgId, id);
  }
}
