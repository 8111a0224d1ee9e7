import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import type { Page } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { planCapDescription } from '../orgs/plan-limits';
import { PaginationQuery } from '../common/pagination';
import type { AuthContext } from '../common/request-context';
import { DeleteAcknowledgementDto } from '../common/delete-ack.dto';
import { AGENT_PATH_ID_PATTERN, AgentCreateDto, AgentDto, AgentUpdateDto } from './agents.dto';
import { AgentsService } from './agents.service';
import { ConditionalWrites } from '../conditional/conditional.decorators';

const HANDLE_TAKEN = {
  status: 409,
  description: '`agent_handle_taken`: another live agent of the organization has this handle (compared case-insensitively).',
};

/** "Try it out" in /docs sends these as they are: they must be valid requests. */
const CREATE_EXAMPLE = { handle: 'helpBot', name: 'Help bot', instructions: 'Answer politely and briefly.' };
const UPDATE_EXAMPLE = { description: 'Answers questions about orders.' };

const AgentIdParam = () =>
  ApiParam({
    name: 'id',
    description: 'Agent id, prefixed (`agent_<24 hex>`) or bare (`<24 hex>`).',
    schema: { type: 'string', pattern: AGENT_PATH_ID_PATTERN },
  });

@ApiTags('Agents')
@Controller('agents')
@ConditionalWrites(AgentsService)
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  @RequireScope('agents:read')
  @ApiOperation({ operationId: 'listAgents', summary: 'Agents of the organization, newest first (soft-deleted agents are never listed)' })
  @ApiEnvelope(AgentDto, { list: true })
  @ApiErrors(422)
  listAgents(@Auth() auth: AuthContext, @Query() query: PaginationQuery): Promise<Page<AgentDto>> {
    return this.agents.listAgents(auth.orgId, query);
  }

  @Post()
  @HttpCode(201)
  @RequireScope('agents:write')
  @ApiOperation({
    operationId: 'createAgent',
    summary: 'Create an agent',
    description: `${planCapDescription('agents', 'live agents')} ${planCapDescription('custom_tool_slots', 'custom tools per agent; `details.fields.tools` is named too')}`,
  })
  @ApiBody({ type: AgentCreateDto, examples: { minimal: { summary: 'Only the required fields', value: CREATE_EXAMPLE } } })
  @ApiEnvelope(AgentDto, { status: 201 })
  @ApiErrors(HANDLE_TAKEN, 422)
  createAgent(@Auth() auth: AuthContext, @Body() body: AgentCreateDto): Promise<AgentDto> {
    return this.agents.createAgent(auth.orgId, body);
  }

  @Get(':id')
  @RequireScope('agents:read')
  @AgentIdParam()
  @ApiOperation({ operationId: 'getAgent', summary: 'Fetch an agent' })
  @ApiEnvelope(AgentDto)
  @ApiErrors(404)
  getAgent(@Auth() auth: AuthContext, @Param('id') id: string): Promise<AgentDto> {
    return this.agents.getAgent(auth.orgId, id);
  }

  @Patch(':id')
  @RequireScope('agents:write')
  @AgentIdParam()
  @ApiOperation({
    operationId: 'updateAgent',
    summary: 'Update an agent; `is_active` runs the activation guard and the trigger/chatbot cascades',
    description: planCapDescription('custom_tool_slots', 'custom tools per agent, when `tools` is given; `details.fields.tools` is named too'),
  })
  @ApiBody({ type: AgentUpdateDto, examples: { oneField: { summary: 'One field; the others stay as they are', value: UPDATE_EXAMPLE } } })
  @ApiEnvelope(AgentDto)
  @ApiErrors(404, { status: 409, description: '`agent_handle_taken`: the new handle is that of another live agent of the organization (compared case-insensitively).' }, 422)
  updateAgent(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: AgentUpdateDto): Promise<AgentDto> {
    return this.agents.updateAgent(auth.orgId, id, body);
  }

  @Delete(':id')
  @RequireScope('agents:delete')
  @AgentIdParam()
  @ApiOperation({ operationId: 'deleteAgent', summary: 'Move an agent to the trash (hard-deleted after 30 days)' })
  @ApiEnvelope(DeleteAcknowledgementDto)
  @ApiErrors(404)
  deleteAgent(@Auth() auth: AuthContext, @Param('id') id: string): Promise<DeleteAcknowledgementDto> {
    return this.agents.deleteAgent(auth.orgId, id);
  }
}
