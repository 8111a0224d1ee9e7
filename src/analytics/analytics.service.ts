import { Injectable } from '@nestjs/common';
import { parseId } from '../../libs/ids/ids';
import { ApiError, ErrorCode } from '../common/api-error';
import { PagedResource } from '../common/envelope';
import { Paginator } from '../common/pagination';
import { ANALYTICS_DEFAULT_WINDOW_DAYS, type AgentAnalyticsDto, type AgentAnalyticsQuery } from './analytics.dto';
import { AnalyticsRepository } from './analytics.repository';
import { trashWindowStart } from '../agents/agents.rules';

const DAY_MS = 24 * 60 * 60 * 1000;
const utcDay = (date: Date): string => date.toISOString().slice(0, 10);

@Injectable()
export class AnalyticsService {
  constructor(
    private readonly repository: AnalyticsRepository,
    private readonly paginator: Paginator,
  ) {}

  async agentAnalytics(orgId: string, rawAgentId: string, query: AgentAnalyticsQuery): Promise<PagedResource<AgentAnalyticsDto>> {
    // the contract's path is `agent_<24 hex>`; the bare form is accepted as on every agent path
    const agentId = parseId('agent', rawAgentId, { allowBare: true });
    if (!agentId) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
    const until = query.until ?? new Date();
    const since = query.since ?? new Date(until.getTime() - ANALYTICS_DEFAULT_WINDOW_DAYS * DAY_MS);
    if (since.getTime() > until.getTime()) throw ApiError.field('since', 'must not be after until');

    // bound to the parameters as given (not the defaulted "now"), so a cursor stays valid as time passes
    const page = this.paginator.pageRequest(query, {
      cursorNamespace: `analytics:${agentId}`,
      filters: { since: query.since?.toISOString(), until: query.until?.toISOString() },
    });
    // an agent soft-deleted beyond the trash window is not found, as on every agent path
    const firstDay = page.afterId === null ? utcDay(until) : utcDay(new Date(Date.parse(`${page.afterId}T00:00:00Z`) - DAY_MS));
    const usage = await this.repository.agentUsage(orgId, agentId, { since, until, trashWindowStart: trashWindowStart() }, { fromDay: firstDay, fetch: page.fetch });
    if (!usage) throw ApiError.notFound('Agent', ErrorCode.AgentNotFound);
    const { totals, days } = usage;
    const series = this.paginator.page(days, page);
    return new PagedResource(
      {
        agent_id: agentId,
        window: { since: since.toISOString(), until: until.toISOString() },
        totals: {
          conversations: totals.conversations,
          messages: totals.messages,
          credits_used: totals.creditsUsed,
          autonomous: totals.autonomous,
          non_autonomous: totals.conversations - totals.autonomous,
          simulations: totals.simulations,
          distinct_tickets: totals.distinctTickets,
          by_source: { dashboard: totals.dashboard, autonomous: totals.autonomousSource, embed: totals.embed, 'sub-agent': totals.subAgent },
        },
        daily: series.items.map((day) => ({
          date: day.id,
          conversations: day.conversations,
          messages: day.messages,
          credits_used: day.creditsUsed,
          autonomous: day.autonomous,
        })),
      },
      series.nextCursor,
    );
  }
}
