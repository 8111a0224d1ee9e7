import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import type { PagedResource } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import type { AuthContext } from '../common/request-context';
import { AgentAnalyticsDto, AgentAnalyticsQuery } from './analytics.dto';
import { AnalyticsService } from './analytics.service';
import { idPattern } from '../common/input-bounds';

@ApiTags('Analytics')
@Controller('analytics')
export class AnalyticsController {
  constructor(private readonly analytics: AnalyticsService) {}

  @Get('agents/:agent_id')
  @RequireScope('analytics:read')
  @ApiOperation({
    operationId: 'getAgentAnalytics',
    summary: 'Usage of one agent over a window: totals and a daily series (newest first, paginated)',
  })
  @ApiParam({ name: 'agent_id', description: '`agent_<24 hex>` (the bare 24-hex id is accepted too)', schema: { type: 'string', pattern: idPattern('agent', { allowBare: true }) } })
  @ApiEnvelope(AgentAnalyticsDto, { paginated: true })
  @ApiErrors(404, 422)
  getAgentAnalytics(
    @Auth() auth: AuthContext,
    @Param('agent_id') agentId: string,
    @Query() query: AgentAnalyticsQuery,
  ): Promise<PagedResource<AgentAnalyticsDto>> {
    return this.analytics.agentAnalytics(auth.orgId, agentId, query);
  }
}
