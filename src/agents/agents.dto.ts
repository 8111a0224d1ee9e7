import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { EXACT_JSON_RULES } from '../common/exact-json';
import { IsIn, IsString, MaxLength, ValidateIf } from 'class-validator';
import { BOUNDS, idPattern } from '../common/input-bounds';
import { PartialUpdateBody, RulesBeyondSchema, SchemaRules } from '../common/openapi';
import { HEX_COLOR_DESCRIPTION, HEX_COLOR_PATTERN } from '../common/validation';
import { BooleanField, DateTimeField, IdField, IdListField, JsonObjectField, ObjectListField, TextField } from '../common/field';

const HANDLE_PATTERN = /^[a-zA-Z][a-zA-Z0-9]*$/;
const HANDLE_MESSAGE = 'handle must start with a letter and contain only letters and digits';
export const AGENT_PATH_ID_PATTERN = idPattern('agent', { allowBare: true });
export const DEFAULT_AGENT_COLOR = '#6366f1';
/**
 * An avatar is shown by dashboards, often as a link or an image source: no
 * scheme that runs script or reads the viewer's machine (`javascript:`,
 * `vbscript:`, `file:`, `data:` other than `data:image/…`), in any case.
 * No control character (browsers drop tabs and newlines inside a scheme,
 * `java\tscript:`) and no leading space (dropped before the scheme is read)
 * either: so the pattern alone is the whole rule, as the document states it.
 * https URLs, image data URLs and short identifiers (`robot`, `🤖`) pass.
 */
const AVATAR_PATTERN = new RegExp(
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  '^(?! )(?![jJ][aA][vV][aA][sS][cC][rR][iI][pP][tT]:|[vV][bB][sS][cC][rR][iI][pP][tT]:|[fF][iI][lL][eE]:|[dD][aA][tT][aA]:(?![iI][mM][aA][gG][eE]/))[^\\u0000-\\u001f\\u007f]*$',
);
const AVATAR_REFUSED = '`javascript:`, `vbscript:`, `file:` and `data:` URLs other than `data:image/…` are refused (422), and so are control characters and a leading space';
const AVATAR_MESSAGE = `must be an image URL or a short identifier: ${AVATAR_REFUSED}`;
const DATA_SOURCE_SCOPES = ['all', 'selected'] as const;
/** a ToolRef whose name starts with this occupies one of the plan's `custom_tool_slots` */
export const CUSTOM_TOOL_PREFIX = 'custom_';

const CONNECTOR_ID = idPattern('connector', { allowBare: true });

export class ToolRefDto {
  @TextField({ minLength: 1, maxLength: BOUNDS.name, description: 'Base tool name, e.g. `<connector>_get_ticket`; never the multi-instance suffix.' })
  name!: string;

  @IdField({ optional: true, nullable: true, pattern: CONNECTOR_ID, description: 'Connector instance id; null for built-in or knowledge tools.' })
  connector_id?: string | null;
}

export class DataSourceRefDto {
  @IdField({ example: 'source_0123456789abcdef01234567', pattern: idPattern('source'), minLength: 1 })
  source_id!: string;

  @ApiProperty({ enum: DATA_SOURCE_SCOPES })
  @IsIn(DATA_SOURCE_SCOPES)
  scope!: 'all' | 'selected';

  @IdListField({ optional: true, pattern: idPattern('document'), maxItems: BOUNDS.documentsPerSource, description: 'Document ids to include when `scope` = `selected`.' })
  documents?: string[];
}

/**
 * The same two shapes as request bodies take them: their own schemas, so the
 * served request schema refuses unknown fields (additionalProperties: false)
 * while the response's stays open to new fields.
 */
class ToolRefInputDto extends ToolRefDto {}
class DataSourceRefInputDto extends DataSourceRefDto {}

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
 * explicit `null` (OptionalNonNull); nullable ones accept it (IsOptional).
 */
abstract class AgentWritableFields {
  @TextField({ optional: true, nullable: true, maxLength: BOUNDS.agentDescription })
  description?: string | null;

  @TextField({ optional: true, nullable: true, minLength: 1, maxLength: BOUNDS.name })
  model?: string | null;

  @TextField({ optional: true, default: DEFAULT_AGENT_COLOR, pattern: HEX_COLOR_PATTERN, message: 'color must be a CSS hex color: #rgb, #rgba, #rrggbb or #rrggbbaa', description: HEX_COLOR_DESCRIPTION })
  color?: string;

  @TextField({
    optional: true,
    nullable: true,
    maxLength: BOUNDS.url,
    pattern: AVATAR_PATTERN,
    message: `avatar ${AVATAR_MESSAGE}`,
    description: `An image URL (https, or \`data:image/…\`) or a short identifier. ${AVATAR_REFUSED}.`,
  })
  avatar?: string | null;

  @BooleanField({ optional: true, default: true })
  include_system_prompt?: boolean;

  @ObjectListField({ optional: true, of: ToolRefInputDto, maxItems: BOUNDS.agentTools })
  tools?: ToolRefInputDto[];

  @IdListField({ optional: true, maxItems: BOUNDS.agentRefs, pattern: CONNECTOR_ID, description: 'Connector ids of this organization.' })
  connectors?: string[];

  @IdListField({ optional: true, maxItems: BOUNDS.agentRefs, pattern: AGENT_PATH_ID_PATTERN, description: 'Agent ids of this organization; an agent may not reference itself.' })
  sub_agents?: string[];

  @ObjectListField({ optional: true, of: DataSourceRefInputDto, maxItems: BOUNDS.agentRefs })
  data_sources?: DataSourceRefInputDto[];

  @JsonObjectField({
    optional: true,
    nullable: true,
    description: `Free-form object of at most ${BOUNDS.jsonBytes} bytes as JSON, nested at most ${BOUNDS.jsonDepth} levels. ${EXACT_JSON_RULES}`,
  })
  pending_trigger_hint?: Record<string, unknown> | null;
}

/** Rules of both agent bodies that JSON Schema cannot express. */
const AGENT_REFERENCES = {
  tools: 'each tool and its connector must exist in the organization',
  connectors: 'each connector must exist in the organization',
  sub_agents: 'each sub-agent must exist, be another agent, and close no loop',
  data_sources: 'each source and document must exist in the organization',
  handle: 'unique among the organization\'s live agents',
};

@SchemaRules({
  // the instructions rule: `instructions`, or a non-null `instructions_html` instead
  anyOf: [{ required: ['instructions'] }, { required: ['instructions_html'] }],
})
@RulesBeyondSchema(AGENT_REFERENCES)
export class AgentCreateDto extends AgentWritableFields {
  @TextField({ pattern: HANDLE_PATTERN, message: HANDLE_MESSAGE, maxLength: BOUNDS.handle, description: 'Unique within the organization, compared case-insensitively.' })
  handle!: string;

  @TextField({ minLength: 1, maxLength: BOUNDS.name })
  name!: string;

  // the instructions rule decides presence here, so this field keeps its own decorators
  @ApiPropertyOptional({ maxLength: BOUNDS.instructions, description: 'Required unless `instructions_html` is provided.' })
  @ValidateIf((object: AgentCreateDto) => object.instructions_html === undefined || object.instructions_html === null || object.instructions !== undefined)
  @IsString({ message: 'instructions is required unless instructions_html is provided, and must be a string' })
  @MaxLength(BOUNDS.instructions)
  instructions?: string;

  @TextField({ optional: true, maxLength: BOUNDS.instructions })
  instructions_html?: string;
}

@PartialUpdateBody()
@RulesBeyondSchema({
  ...AGENT_REFERENCES,
  instructions: 'may be cleared only while the stored instructions_html is set',
  instructions_html: 'may be cleared only while the stored instructions are set',
  is_active: 'the activation guard judges the stored agent and what it references',
})
export class AgentUpdateDto extends AgentWritableFields {
  @TextField({ optional: true, pattern: HANDLE_PATTERN, message: HANDLE_MESSAGE, maxLength: BOUNDS.handle })
  handle?: string;

  @TextField({ optional: true, minLength: 1, maxLength: BOUNDS.name })
  name?: string;

  @TextField({ optional: true, nullable: true, maxLength: BOUNDS.instructions, description: 'May be cleared only while `instructions_html` is set.' })
  instructions?: string | null;

  @TextField({ optional: true, nullable: true, maxLength: BOUNDS.instructions, description: 'May be cleared only while `instructions` is set.' })
  instructions_html?: string | null;

  @BooleanField({ optional: true, description: 'Activation guard and cascades: see "States and transitions".' })
  is_active?: boolean;

  @TextField({
    optional: true,
    nullable: true,
    maxLength: BOUNDS.deactivatedReason,
    description: 'Set or cleared by the system on cascade events; may be set manually for diagnostics.',
  })
  deactivated_reason?: string | null;

  @DateTimeField({ optional: true, nullable: true, description: 'Set or cleared by the system on cascade events; may be set manually for diagnostics.' })
  deactivated_at?: string | null;
}
