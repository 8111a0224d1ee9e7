import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsDate, IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { BOUNDS, idPattern } from '../common/input-bounds';
import { PaginationQuery, toStrictInt } from '../common/pagination';
import { QUERY_DATE_MESSAGE, QUERY_DATE_SCHEMA, toQueryBoolean, toQueryDate } from '../common/query-values';

export const CONVERSATION_SOURCES = ['dashboard', 'autonomous', 'embed', 'sub-agent'] as const;
export type ConversationSource = (typeof CONVERSATION_SOURCES)[number];
export const MESSAGE_ROLES = ['user', 'assistant', 'tool', 'system'] as const;

const DATE_MESSAGE = QUERY_DATE_MESSAGE;
const CONVERSATION_NUMBER_MESSAGE = { message: `$property must be an integer from 1 to ${BOUNDS.conversationNumber}` };
const BOOLEAN_MESSAGE = { message: '$property must be true, false, 1 or 0' };
/** typed boolean in the document, so generated clients take a boolean; the forms the service has always read stay accepted */
const ALSO_ONE_AND_ZERO = '`1` and `0` are accepted as `true` and `false`; any other value is refused (422).';

/**
 * The named query parameters of `GET /conversations`. `metadata[KEY]` keys are
 * not properties here: the query pipe takes them out first (they are dynamic).
 */
export class ConversationListQuery extends PaginationQuery {
  @ApiPropertyOptional({ pattern: idPattern('agent', { allowBare: true }), maxLength: BOUNDS.id, description: 'One agent: `agent_<24 hex>` or the bare 24-hex id.' })
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(BOUNDS.id)
  agent_id?: string;

  // documented by the list route itself (SOURCE_QUERY in the controller): a class's enum is lost when Swagger spreads it into query parameters
  @IsOptional() @IsIn(CONVERSATION_SOURCES, { message: `$property must be one of ${CONVERSATION_SOURCES.join(', ')}` })
  source?: ConversationSource;

  @ApiPropertyOptional({ maxLength: BOUNDS.filterText, description: 'Exact match on the model used.' })
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(BOUNDS.filterText)
  model?: string;

  @ApiPropertyOptional({
    pattern: idPattern('conversation', { allowBare: true }),
    maxLength: BOUNDS.id,
    description: 'Sub-agent runs of one parent: `conv_<24 hex>` or the bare 24-hex id (combine with `source=sub-agent`).',
  })
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(BOUNDS.id)
  parent_conversation_id?: string;

  @ApiPropertyOptional({ type: 'integer', format: 'int32', minimum: 1, maximum: BOUNDS.conversationNumber })
  @IsOptional()
  @Transform(toStrictInt)
  @IsInt(CONVERSATION_NUMBER_MESSAGE)
  @Min(1, CONVERSATION_NUMBER_MESSAGE)
  @Max(BOUNDS.conversationNumber, CONVERSATION_NUMBER_MESSAGE)
  conversation_number?: number;

  @ApiPropertyOptional({ ...QUERY_DATE_SCHEMA, description: '`last_message_at >= since`; alias of `last_message_after`.' })
  @IsOptional() @Transform(toQueryDate) @IsDate(DATE_MESSAGE)
  since?: Date;

  @ApiPropertyOptional({ ...QUERY_DATE_SCHEMA, description: '`created_at >= value`' })
  @IsOptional() @Transform(toQueryDate) @IsDate(DATE_MESSAGE)
  created_after?: Date;

  @ApiPropertyOptional({ ...QUERY_DATE_SCHEMA, description: '`created_at <= value`' })
  @IsOptional() @Transform(toQueryDate) @IsDate(DATE_MESSAGE)
  created_before?: Date;

  @ApiPropertyOptional({ ...QUERY_DATE_SCHEMA, description: '`last_message_at >= value`' })
  @IsOptional() @Transform(toQueryDate) @IsDate(DATE_MESSAGE)
  last_message_after?: Date;

  @ApiPropertyOptional({ ...QUERY_DATE_SCHEMA, description: '`last_message_at <= value`' })
  @IsOptional() @Transform(toQueryDate) @IsDate(DATE_MESSAGE)
  last_message_before?: Date;

  @ApiPropertyOptional({
    maxLength: BOUNDS.filterText,
    description: 'Matches `metadata.ticketId`, `metadata.ticket_id` or `trigger_payload.ticket.id`, stored as string or number.',
  })
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(BOUNDS.filterText)
  ticket_id?: string;

  @ApiPropertyOptional({ maxLength: BOUNDS.filterText, description: 'Case-insensitive substring of `title` (not message content); every character is literal.' })
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(BOUNDS.filterText)
  q?: string;

  @ApiPropertyOptional({ type: 'boolean', description: `Only test-run conversations (\`true\`) or only real ones (\`false\`). ${ALSO_ONE_AND_ZERO}` })
  @IsOptional() @Transform(toQueryBoolean) @IsBoolean(BOOLEAN_MESSAGE)
  is_simulation?: boolean;

  @ApiPropertyOptional({ type: 'boolean', description: `Only the onboarding welcome conversation (\`true\`) or all others (\`false\`). ${ALSO_ONE_AND_ZERO}` })
  @IsOptional() @Transform(toQueryBoolean) @IsBoolean(BOOLEAN_MESSAGE)
  is_onboarding?: boolean;
}

/** `GET /conversations/{id}` query. */
export class ConversationDetailQuery {
  @ApiPropertyOptional({
    type: 'boolean',
    description: `\`true\` adds \`trigger_payload\` (may contain customer personal data); \`false\` or absent leave it out. ${ALSO_ONE_AND_ZERO}`,
  })
  @IsOptional() @Transform(toQueryBoolean) @IsBoolean(BOOLEAN_MESSAGE)
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
