import { ApiProperty } from '@nestjs/swagger';
import { QueryDateParam } from '../common/field';
import { PaginationQuery } from '../common/pagination';

export const ANALYTICS_DEFAULT_WINDOW_DAYS = 30;

export class AgentAnalyticsQuery extends PaginationQuery {
  @QueryDateParam({ description: `Window start (inclusive); default \`until\` minus ${ANALYTICS_DEFAULT_WINDOW_DAYS} days.` })
  since?: Date;

  @QueryDateParam({ description: 'Window end (inclusive); default now.' })
  until?: Date;
}

class AnalyticsWindowDto {
  @ApiProperty({ format: 'date-time' }) since!: string;
  @ApiProperty({ format: 'date-time' }) until!: string;
}

class AnalyticsBySourceDto {
  @ApiProperty({ type: 'integer' }) dashboard!: number;
  @ApiProperty({ type: 'integer' }) autonomous!: number;
  @ApiProperty({ type: 'integer' }) embed!: number;
  @ApiProperty({ type: 'integer', name: 'sub-agent' }) 'sub-agent'!: number;
}

class AnalyticsTotalsDto {
  @ApiProperty({ type: 'integer', description: 'conversations created in the window (every source, simulations included)' }) conversations!: number;
  @ApiProperty({ type: 'integer', description: 'messages of those conversations' }) messages!: number;
  @ApiProperty({ type: 'integer', description: 'credits those conversations used' }) credits_used!: number;
  @ApiProperty({ type: 'integer', description: 'autonomous runs (started by a trigger)' }) autonomous!: number;
  @ApiProperty({ type: 'integer', description: 'conversations that were not autonomous' }) non_autonomous!: number;
  @ApiProperty({ type: 'integer', description: 'test runs from the agent builder' }) simulations!: number;
  @ApiProperty({ type: 'integer', description: 'distinct ticket ids the conversations were about' }) distinct_tickets!: number;
  @ApiProperty({ type: AnalyticsBySourceDto }) by_source!: AnalyticsBySourceDto;
}

class AnalyticsDayDto {
  @ApiProperty({ format: 'date', description: 'UTC day' }) date!: string;
  @ApiProperty({ type: 'integer' }) conversations!: number;
  @ApiProperty({ type: 'integer' }) messages!: number;
  @ApiProperty({ type: 'integer' }) credits_used!: number;
  @ApiProperty({ type: 'integer' }) autonomous!: number;
}

export class AgentAnalyticsDto {
  @ApiProperty() agent_id!: string;
  @ApiProperty({ type: AnalyticsWindowDto }) window!: AnalyticsWindowDto;
  @ApiProperty({ type: AnalyticsTotalsDto, description: 'over the whole window (the same on every page)' }) totals!: AnalyticsTotalsDto;
  @ApiProperty({
    type: [AnalyticsDayDto],
    description: 'one entry per UTC day of the window (days without conversations included), newest first; paginated by `cursor`/`limit`, next page in `meta.next_cursor`',
  })
  daily!: AnalyticsDayDto[];
}
