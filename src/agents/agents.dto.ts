import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { EXACT_JSON_RULES } from '../common/exact-json';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { BOUNDS, idPattern, IsBoundedJson } from '../common/input-bounds';
import { PartialUpdateBody } from '../common/openapi';
import { DATE_TIME_DESCRIPTION, HEX_COLOR_DESCRIPTION, HEX_COLOR_PATTERN, IsDateTime, OptionalNonNull } from '../common/validation';

export const HANDLE_PATTERN = /^[a-zA-Z][a-zA-Z0-9]*$/;
export const AGENT_PATH_ID_PATTERN = idPattern('agent', { allowBare: true });
export const DEFAULT_AGENT_COLOR = '#6366f1';
export const COLOR_PATTERN = HEX_COLOR_PATTERN;
export const DATA_SOURCE_SCOPES = ['all', 'selected'] as const;
/** a ToolRef whose name starts with this occupies one of the plan's `custom_tool_slots` */
export const CUSTOM_TOOL_PREFIX = 'custom_';

export const MAX_HANDLE_LENGTH = BOUNDS.handle;
export const MAX_NAME_LENGTH = BOUNDS.name;
export const MAX_TEXT_LENGTH = BOUNDS.instructions;
export const MAX_REFS = BOUNDS.agentRefs;
export const MAX_TOOLS = BOUNDS.agentTools;
const CONNECTOR_ID = { pattern: idPattern('connector', { allowBare: true }), maxLength: BOUNDS.id };
const AGENT_ID = { pattern: idPattern('agent', { allowBare: true }), maxLength: BOUNDS.id };

/** The key may be omitted, but an explicit `null` is rejected (the field is not nullable). */
const OmittableNotNull = OptionalNonNull;

export class ToolRefDto {
  @ApiProperty({ description: 'Base tool name, e.g. `<connector>_get_ticket`; never the multi-instance suffix.', maxLength: MAX_NAME_LENGTH })
  @IsString()
  @IsNotEmpty()
  @MaxLength(MAX_NAME_LENGTH)
  name!: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, ...CONNECTOR_ID, description: 'Connector instance id; null for built-in or knowledge tools.' })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.id)
  connector_id?: string | null;
}

export class DataSourceRefDto {
  @ApiProperty({ example: 'source_0123456789abcdef01234567', pattern: idPattern('source'), maxLength: BOUNDS.id })
  @IsString()
  @IsNotEmpty()
  @MaxLength(BOUNDS.id)
  source_id!: string;

  @ApiProperty({ enum: DATA_SOURCE_SCOPES })
  @IsIn(DATA_SOURCE_SCOPES)
  scope!: 'all' | 'selected';

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', pattern: idPattern('document'), maxLength: BOUNDS.id },
    maxItems: BOUNDS.documentsPerSource,
    description: 'Document ids to include when `scope` = `selected`.',
  })
  @OmittableNotNull()
  @IsArray()
  @ArrayMaxSize(BOUNDS.documentsPerSource)
  @IsString({ each: true })
  @MaxLength(BOUNDS.id, { each: true })
  documents?: string[];
}

/** Agent (response). The first twelve fields are the contract's table; the rest read back what AgentCreate/AgentUpdate wrote. */
export class AgentDto {
  @ApiProperty({ example: 'agent_0123456789abcdef01234567' }) id!: string;
  @ApiProperty({ description: 'camelCase alphanumeric; unique per organization, case-insensitively.' }) handle!: string;
  @ApiProperty() name!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) description?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'Model identifier.' }) model?: string | null;
  @ApiProperty() is_active!: boolean;
  @ApiPropertyOptional({ type: 'string', nullable: true, description: HEX_COLOR_DESCRIPTION }) color?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) avatar?: string | null;
  @ApiProperty({ type: 'integer', minimum: 0 }) tools_count!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) sub_agents_count!: number;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) updated_at?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true }) instructions?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) instructions_html?: string | null;
  @ApiPropertyOptional() include_system_prompt?: boolean;
  @ApiPropertyOptional({ type: [ToolRefDto], description: 'The stored tool list; PATCH `tools` replaces it whole.' }) tools?: ToolRefDto[];
  @ApiPropertyOptional({ type: [String], description: 'Connector ids.' }) connectors?: string[];
  @ApiPropertyOptional({ type: [String], description: 'Agent ids.' }) sub_agents?: string[];
  @ApiPropertyOptional({ type: [DataSourceRefDto] }) data_sources?: DataSourceRefDto[];
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true }) pending_trigger_hint?: Record<string, unknown> | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) deactivated_reason?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) deactivated_at?: string | null;
}

/**
 * Fields shared by AgentCreate and AgentUpdate. Non-nullable fields reject an
 * explicit `null` (OmittableNotNull); nullable ones accept it (IsOptional).
 */
abstract class AgentWritableFields {
  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: BOUNDS.agentDescription })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.agentDescription)
  description?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: MAX_NAME_LENGTH })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(MAX_NAME_LENGTH)
  model?: string | null;

  @ApiPropertyOptional({ default: DEFAULT_AGENT_COLOR, pattern: COLOR_PATTERN.source, description: HEX_COLOR_DESCRIPTION })
  @OmittableNotNull()
  @IsString()
  @Matches(COLOR_PATTERN, { message: 'color must be a CSS hex color: #rgb, #rgba, #rrggbb or #rrggbbaa' })
  color?: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: BOUNDS.url })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.url)
  avatar?: string | null;

  @ApiPropertyOptional({ default: true })
  @OmittableNotNull()
  @IsBoolean()
  include_system_prompt?: boolean;

  @ApiPropertyOptional({ type: [ToolRefDto], maxItems: MAX_TOOLS })
  @OmittableNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_TOOLS)
  @ValidateNested({ each: true })
  @Type(() => ToolRefDto)
  tools?: ToolRefDto[];

  @ApiPropertyOptional({ type: 'array', items: { type: 'string', ...CONNECTOR_ID }, maxItems: MAX_REFS, description: 'Connector ids of this organization.' })
  @OmittableNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_REFS)
  @IsString({ each: true })
  @MaxLength(BOUNDS.id, { each: true })
  connectors?: string[];

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', ...AGENT_ID },
    maxItems: MAX_REFS,
    description: 'Agent ids of this organization; an agent may not reference itself.',
  })
  @OmittableNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_REFS)
  @IsString({ each: true })
  @MaxLength(BOUNDS.id, { each: true })
  sub_agents?: string[];

  @ApiPropertyOptional({ type: [DataSourceRefDto], maxItems: MAX_REFS })
  @OmittableNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_REFS)
  @ValidateNested({ each: true })
  @Type(() => DataSourceRefDto)
  data_sources?: DataSourceRefDto[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: `Free-form object of at most ${BOUNDS.jsonBytes} bytes as JSON, nested at most ${BOUNDS.jsonDepth} levels. ${EXACT_JSON_RULES}`,
  })
  @IsOptional()
  @IsObject()
  @IsBoundedJson()
  pending_trigger_hint?: Record<string, unknown> | null;
}

export class AgentCreateDto extends AgentWritableFields {
  @ApiProperty({ pattern: HANDLE_PATTERN.source, maxLength: MAX_HANDLE_LENGTH, description: 'Unique within the organization, compared case-insensitively.' })
  @IsString()
  @MaxLength(MAX_HANDLE_LENGTH)
  @Matches(HANDLE_PATTERN, { message: 'handle must start with a letter and contain only letters and digits' })
  handle!: string;

  @ApiProperty({ maxLength: MAX_NAME_LENGTH })
  @IsString()
  @IsNotEmpty()
  @MaxLength(MAX_NAME_LENGTH)
  name!: string;

  @ApiPropertyOptional({ maxLength: MAX_TEXT_LENGTH, description: 'Required unless `instructions_html` is provided.' })
  @ValidateIf((object: AgentCreateDto) => object.instructions_html === undefined || object.instructions_html === null || object.instructions !== undefined)
  @IsString({ message: 'instructions is required unless instructions_html is provided, and must be a string' })
  @MaxLength(MAX_TEXT_LENGTH)
  instructions?: string;

  @ApiPropertyOptional({ maxLength: MAX_TEXT_LENGTH })
  @OmittableNotNull()
  @IsString()
  @MaxLength(MAX_TEXT_LENGTH)
  instructions_html?: string;
}

@PartialUpdateBody()
export class AgentUpdateDto extends AgentWritableFields {
  @ApiPropertyOptional({ pattern: HANDLE_PATTERN.source, maxLength: MAX_HANDLE_LENGTH })
  @OmittableNotNull()
  @IsString()
  @MaxLength(MAX_HANDLE_LENGTH)
  @Matches(HANDLE_PATTERN, { message: 'handle must start with a letter and contain only letters and digits' })
  handle?: string;

  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH })
  @OmittableNotNull()
  @IsString()
  @IsNotEmpty()
  @MaxLength(MAX_NAME_LENGTH)
  name?: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: MAX_TEXT_LENGTH, description: 'May be cleared only while `instructions_html` is set.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_TEXT_LENGTH)
  instructions?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: MAX_TEXT_LENGTH, description: 'May be cleared only while `instructions` is set.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_TEXT_LENGTH)
  instructions_html?: string | null;

  @ApiPropertyOptional({ description: 'Activation guard and cascades: see "States and transitions".' })
  @OmittableNotNull()
  @IsBoolean()
  is_active?: boolean;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    maxLength: BOUNDS.deactivatedReason,
    description: 'Set or cleared by the system on cascade events; may be set manually for diagnostics.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.deactivatedReason)
  deactivated_reason?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    nullable: true,
    maxLength: BOUNDS.dateTime,
    description: `Set or cleared by the system on cascade events; may be set manually for diagnostics. ${DATE_TIME_DESCRIPTION}`,
  })
  @IsOptional()
  @IsDateTime()
  deactivated_at?: string | null;
}

export class AgentDeletedDto {
  @ApiProperty({ example: 'agent_0123456789abcdef01234567' }) id!: string;
  @ApiProperty({ enum: [true] }) deleted!: true;
}
