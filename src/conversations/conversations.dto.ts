import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { QueryBooleanParam, QueryDateParam, QueryIntParam, QueryTextParam } from '../common/field';
import { BOUNDS, idPattern } from '../common/input-bounds';
import { PaginationQuery } from '../common/pagination';

export const CONVERSATION_SOURCES = ['dashboard', 'autonomous', 'embed', 'sub-agent'] as const;
export type ConversationSource = (typeof CONVERSATION_SOURCES)[number];
export const MESSAGE_ROLES = ['user', 'assistant', 'tool', 'system'] as const;

/**
 * The named query parameters of `GET /conversations`. `metadata[KEY]` keys are
 * not properties here: the query pipe takes them out first (they are dynamic).
 */
export class ConversationListQuery extends PaginationQuery {
  @QueryTextParam({ maxLength: BOUNDS.id, pattern: idPattern('agent', { allowBare: true }), description: 'One agent: `agent_<24 hex>` or the bare 24-hex id.' })
  agent_id?: string;

  // documented by the list route itself (SOURCE_QUERY in the controller): a class's enum is lost when Swagger spreads it into query parameters
  @IsOptional() @IsIn(CONVERSATION_SOURCES, { message: `$property must be one of ${CONVERSATION_SOURCES.join(', ')}` })
  source?: ConversationSource;

  @QueryTextParam({ maxLength: BOUNDS.filterText, description: 'Exact match on the model used.' })
  model?: string;

  @QueryTextParam({
    maxLength: BOUNDS.id,
    pattern: idPattern('conversation', { allowBare: true }),
    description: 'Sub-agent runs of one parent: `conv_<24 hex>` or the bare 24-hex id (combine with `source=sub-agent`).',
  })
  parent_conversation_id?: string;

  @QueryIntParam({ minimum: 1, maximum: BOUNDS.conversationNumber })
  conversation_number?: number;

  @QueryDateParam({ description: '`last_message_at >= since`; alias of `last_message_after`.' })
  since?: Date;

  @QueryDateParam({ description: '`created_at >= value`' })
  created_after?: Date;

  @QueryDateParam({ description: '`created_at <= value`' })
  created_before?: Date;

  @QueryDateParam({ description: '`last_message_at >= value`' })
  last_message_after?: Date;

  @QueryDateParam({ description: '`last_message_at <= value`' })
  last_message_before?: Date;

  @QueryTextParam({
    maxLength: BOUNDS.filterText,
    description: 'Matches `metadata.ticketId`, `metadata.ticket_id` or `trigger_payload.ticket.id`, stored as string or number.',
  })
  ticket_id?: string;

  @QueryTextParam({ maxLength: BOUNDS.filterText, description: 'Case-insensitive substring of `title` (not message content); every character is literal.' })
  q?: string;

  @QueryBooleanParam({ description: 'Only test-run conversations (`true`) or only real ones (`false`).' })
  is_simulation?: boolean;

  @QueryBooleanParam({ description: 'Only the onboarding welcome conversation (`true`) or all others (`false`).' })
  is_onboarding?: boolean;
}

/** `GET /conversations/{id}` query. */
export class ConversationDetailQuery {
  @QueryBooleanParam({ description: '`true` adds `trigger_payload` (may contain customer personal data); `false` or absent leave it out.' })
  include_trigger_payload?: boolean;
}

class ToolCallDto {
  @ApiProperty() id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'JSON-serialized arguments' }) arguments!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) status?: string | null;
}

export class MessageDto {
  @ApiPropertyOptional({ type: 'string', nullable: true, pattern: idPattern('message') }) id?: string | null;
  @ApiProperty({ enum: MESSAGE_ROLES }) role!: string;
  @ApiProperty() content!: string;
  @ApiPropertyOptional({ type: [ToolCallDto], nullable: true }) tool_calls?: ToolCallDto[] | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) tool_call_id?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) tool_name?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) connector_type?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) model?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
}

export class ConversationSummaryDto {
  @ApiProperty({ pattern: idPattern('conversation') }) id!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) title?: string | null;
  @ApiProperty({ enum: CONVERSATION_SOURCES }) source!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) agent_id?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) model?: string | null;
  @ApiProperty() autonomous!: boolean;
  @ApiProperty() is_onboarding!: boolean;
  @ApiProperty() is_simulation!: boolean;
  @ApiPropertyOptional({ type: 'integer', nullable: true, description: 'null for sub-agent runs' }) conversation_number?: number | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) parent_conversation_id?: string | null;
  @ApiProperty({ type: 'integer', minimum: 0 }) credits_used!: number;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true }) metadata?: Record<string, unknown> | null;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, nullable: true, description: 'null in list responses; the real count in the detail' })
  message_count?: number | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) last_message_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) updated_at?: string | null;
}

export class ConversationDetailDto extends ConversationSummaryDto {
  @ApiProperty({ type: [MessageDto] }) messages!: MessageDto[];
  // any JSON value or null: no `type`, so an object, array, string, number, boolean or null all fit
  @ApiPropertyOptional({
    type: undefined,
    oneOf: [{ type: 'object', additionalProperties: true }, { type: 'array', items: {} }, { type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }],
    description: 'Raw webhook payload of an autonomous run, any JSON value or null; present only with `include_trigger_payload=true` or `1`.',
  })
  trigger_payload?: unknown;
}
