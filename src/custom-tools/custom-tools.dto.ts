import { ApiHideProperty, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
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
  MaxLength,
  ValidateBy,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { BOUNDS, idPattern } from '../common/input-bounds';
import { PartialUpdateBody } from '../common/openapi';
import { OptionalNonNull, UnknownKeysUnnamed } from '../common/validation';
import { AUTH_TYPES, HEADER_NAME, HEADER_VALUE_PATTERN, HTTP_METHODS, PARAM_LOCATIONS, PARAM_NAME, PARAM_TYPES, RESERVED_HEADER_RULES, TOOL_TYPES } from './custom-tools.rules';
import { OUTBOUND_URL_RULES } from '../../libs/url-policy/url-policy';

const SECRET_MAX = BOUNDS.headerValue;
/** Every credential ends up in an outbound header. */
const SECRET_RULE = 'No control characters (CR, LF, NUL and the others except tab): they would end or split the header.';
const URL_DESCRIPTION =
  'absolute http(s) URL. `{{param}}` placeholders (blanks inside the braces allowed; undeclared ones kept as written) may stand in the path, query and fragment, ' +
  'and for host labels left of the registrable domain, which is written out (`https://{{subdomain}}.zendesk.com/...`); never for the scheme, the port, the whole host or part of an IP address. ' +
  OUTBOUND_URL_RULES;

// ---------- responses ----------

export class CustomToolParamDto {
  @ApiProperty() name!: string;
  @ApiProperty({ enum: PARAM_TYPES, default: 'string' }) type!: string;
  @ApiPropertyOptional() description?: string;
  @ApiProperty({ default: false }) required!: boolean;
  @ApiProperty({ enum: PARAM_LOCATIONS, description: 'defaults to `query` for GET and `body` otherwise' }) in!: string;
  @ApiPropertyOptional({ description: 'actual HTTP header name; set when `in` = `header` (defaults to the parameter\'s `name`)' }) headerName?: string;
}

export class CustomToolAuthDto {
  @ApiProperty({ enum: AUTH_TYPES }) type!: string;
  @ApiProperty({ type: 'string', nullable: true, description: 'set only when `type` = `api_key` (default `X-API-Key`)' })
  header_name!: string | null;
}

export class CustomToolGroupDto {
  @ApiProperty() name!: string;
  @ApiProperty({ type: 'string', nullable: true }) icon!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) color!: string | null;
}

export class CustomToolDto {
  @ApiProperty({ pattern: idPattern('customTool') }) id!: string;
  @ApiProperty({ description: 'generated from `label`, prefixed `custom_`; immutable after creation' }) name!: string;
  @ApiProperty() label!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ enum: TOOL_TYPES }) type!: string;
  @ApiProperty({ enum: HTTP_METHODS }) method!: string;
  @ApiProperty({ description: 'may contain `{{param}}` placeholders substituted at execution time; undeclared ones are kept as written' }) url!: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) headers!: Record<string, string>;
  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'JSON string template for POST, PUT, PATCH bodies; supports `{{param}}`' })
  body_template?: string | null;
  @ApiProperty({ type: [CustomToolParamDto] }) parameters!: CustomToolParamDto[];
  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'dot path into the response, e.g. `data.items`' })
  response_mapping?: string | null;
  @ApiProperty({ type: CustomToolAuthDto, description: 'Credentials are never returned.' }) auth!: CustomToolAuthDto;
  @ApiPropertyOptional({ type: CustomToolGroupDto, nullable: true }) group?: CustomToolGroupDto | null;
  @ApiProperty() is_active!: boolean;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) updated_at?: string | null;
}

// ---------- requests ----------

class CustomToolParamInputDto {
  @ApiProperty({
    minLength: 1,
    maxLength: BOUNDS.toolParameterName,
    pattern: PARAM_NAME.source,
    description: `1 to ${BOUNDS.toolParameterName} letters, digits, \`_\`, \`.\` or \`-\` (the characters of a \`{{placeholder}}\`); unique within the tool`,
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(BOUNDS.toolParameterName)
  name!: string;
  @ApiPropertyOptional({ enum: PARAM_TYPES, default: 'string' }) @OptionalNonNull() @IsIn(PARAM_TYPES) type?: string;
  @ApiPropertyOptional({ maxLength: BOUNDS.toolParameterDescription })
  @OptionalNonNull()
  @IsString()
  @MaxLength(BOUNDS.toolParameterDescription)
  description?: string;
  @ApiPropertyOptional({ default: false }) @OptionalNonNull() @IsBoolean() required?: boolean;
  @ApiPropertyOptional({ enum: PARAM_LOCATIONS, description: 'default `query` for GET, `body` otherwise' })
  @OptionalNonNull()
  @IsIn(PARAM_LOCATIONS)
  in?: string;
  @ApiPropertyOptional({
    minLength: 1,
    maxLength: BOUNDS.headerName,
    pattern: HEADER_NAME.source,
    description: `actual HTTP header name (an HTTP token), used when \`in\` = \`header\`; defaults to the parameter's \`name\`, which is returned and then follows the same rule. ${RESERVED_HEADER_RULES}`,
  })
  @OptionalNonNull()
  @IsString()
  @MaxLength(BOUNDS.headerName)
  headerName?: string;
}

/** A client may paste a secret where a field name goes: an unknown key is refused without its name. */
@UnknownKeysUnnamed('holds a field other than token, apiKey, header_name, username and password (its name is not repeated: it may be a secret)')
export class CustomToolCredentialsInputDto {
  @ApiPropertyOptional({ description: `used when \`type\` = \`bearer\`; dropped (never stored) otherwise. ${SECRET_RULE}`, writeOnly: true, maxLength: SECRET_MAX })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  token?: string;
  @ApiPropertyOptional({ description: `used when \`type\` = \`api_key\`; dropped (never stored) otherwise. ${SECRET_RULE}`, writeOnly: true, maxLength: SECRET_MAX })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  apiKey?: string;
  @ApiPropertyOptional({ description: `header that carries the api key (an HTTP token); default \`X-API-Key\`; used when \`type\` = \`api_key\`. ${RESERVED_HEADER_RULES}`,
    minLength: 1, maxLength: BOUNDS.headerName, pattern: HEADER_NAME.source, })
  @OptionalNonNull()
  @IsString()
  @MaxLength(BOUNDS.headerName)
  header_name?: string;
  @ApiPropertyOptional({
    description: `used when \`type\` = \`basic\`; dropped (never stored) otherwise. ${SECRET_RULE} No colon: basic authentication joins user and password with one.`,
    writeOnly: true,
    maxLength: SECRET_MAX,
    pattern: '^[^:]*$',
  })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  username?: string;
  @ApiPropertyOptional({ description: `used when \`type\` = \`basic\`; dropped (never stored) otherwise. ${SECRET_RULE}`, writeOnly: true, maxLength: SECRET_MAX })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  password?: string;
}

class CustomToolAuthInputDto {
  @ApiProperty({ enum: AUTH_TYPES }) @IsIn(AUTH_TYPES) type!: string;
  @ApiPropertyOptional({
    type: CustomToolCredentialsInputDto,
    description:
      'raw secrets, encrypted at rest and never returned. Optional: without it a tool keeps its stored secrets when `type` is unchanged and drops them when `type` changes. ' +
      'A fresh object replaces the stored one: fields it lacks are absent afterwards, and fields the `type` does not use are dropped (never stored or returned).',
  })
  @OptionalNonNull()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomToolCredentialsInputDto)
  credentials?: CustomToolCredentialsInputDto;
}

class CustomToolGroupInputDto {
  @ApiProperty({ minLength: 1, maxLength: BOUNDS.groupName }) @IsString() @IsNotEmpty() @MaxLength(BOUNDS.groupName) name!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: BOUNDS.groupIcon })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.groupIcon)
  icon?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: BOUNDS.groupColor })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.groupColor)
  color?: string | null;
}

/** Fields shared by create and update; all optional here, `CustomToolCreateDto` makes some required. */
class CustomToolFields {
  @ApiPropertyOptional({ enum: TOOL_TYPES, default: 'read' }) @OptionalNonNull() @IsIn(TOOL_TYPES) type?: string;
  @ApiPropertyOptional({
    type: 'object',
    maxProperties: BOUNDS.headers,
    additionalProperties: { type: 'string', maxLength: BOUNDS.headerValue, pattern: HEADER_VALUE_PATTERN },
    description:
      `at most ${BOUNDS.headers} headers; names are HTTP header names of at most ${BOUNDS.headerName} characters, values strings of at most ${BOUNDS.headerValue} without control characters ` +
      '(CR, LF, NUL and the others except tab: they would end or split the header). Plain headers are stored unencrypted and returned in responses. ' +
      RESERVED_HEADER_RULES,
  })
  @OptionalNonNull()
  @IsObject()
  headers?: Record<string, string>;
  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    maxLength: BOUNDS.bodyTemplate,
    description:
      'JSON string template for POST, PUT, PATCH bodies; supports `{{param}}` (blanks inside the braces allowed; undeclared ones kept as written). ' +
      'A placeholder inside a JSON string is replaced by the value as text, a bare one by the value as JSON; the template must be valid JSON once placeholders are substituted.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.bodyTemplate)
  body_template?: string | null;
  @ApiPropertyOptional({
    type: [CustomToolParamInputDto],
    maxItems: BOUNDS.toolParameters,
    description: `at most ${BOUNDS.toolParameters}; names unique within the tool. Placeholders need no declared parameter.`,
  })
  @OptionalNonNull()
  @IsArray()
  @ArrayMaxSize(BOUNDS.toolParameters)
  @ValidateNested({ each: true })
  @Type(() => CustomToolParamInputDto)
  parameters?: CustomToolParamInputDto[];
  @ApiPropertyOptional({ type: 'string', nullable: true, maxLength: BOUNDS.responseMapping, description: 'dot path into the response, e.g. `data.items`' })
  @IsOptional()
  @IsString()
  @MaxLength(BOUNDS.responseMapping)
  response_mapping?: string | null;
  @ApiPropertyOptional({ type: CustomToolAuthInputDto })
  @OptionalNonNull()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomToolAuthInputDto)
  auth?: CustomToolAuthInputDto;
  @ApiPropertyOptional({ type: CustomToolGroupInputDto, nullable: true })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomToolGroupInputDto)
  group?: CustomToolGroupInputDto | null;
}

export class CustomToolCreateDto extends CustomToolFields {
  @ApiProperty({ description: 'human-readable name that should include connector and resource', minLength: 1, maxLength: BOUNDS.name })
  @IsString()
  @IsNotEmpty()
  @MaxLength(BOUNDS.name)
  label!: string;
  @ApiProperty({ description: 'addressed to the language model; decides when the tool is called', minLength: 1, maxLength: BOUNDS.toolDescription })
  @IsString()
  @IsNotEmpty()
  @MaxLength(BOUNDS.toolDescription)
  description!: string;
  @ApiProperty({ enum: HTTP_METHODS }) @IsIn(HTTP_METHODS) method!: string;
  @ApiProperty({ description: URL_DESCRIPTION, maxLength: BOUNDS.url })
  @IsString()
  @MaxLength(BOUNDS.url)
  url!: string;
}

@PartialUpdateBody()
export class CustomToolUpdateDto extends CustomToolFields {
  @ApiPropertyOptional({ minLength: 1, maxLength: BOUNDS.name }) @OptionalNonNull() @IsString() @IsNotEmpty() @MaxLength(BOUNDS.name) label?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: BOUNDS.toolDescription })
  @OptionalNonNull()
  @IsString()
  @IsNotEmpty()
  @MaxLength(BOUNDS.toolDescription)
  description?: string;
  @ApiPropertyOptional({ enum: HTTP_METHODS }) @OptionalNonNull() @IsIn(HTTP_METHODS) method?: string;
  @ApiPropertyOptional({ description: URL_DESCRIPTION, maxLength: BOUNDS.url }) @OptionalNonNull() @IsString() @MaxLength(BOUNDS.url) url?: string;
  @ApiPropertyOptional() @OptionalNonNull() @IsBoolean() is_active?: boolean;

  /** `name` cannot be changed; declared only to answer with a clear 422 */
  @ApiHideProperty()
  @ValidateIf((_object: object, value: unknown) => value !== undefined)
  @ValidateBy({ name: 'immutable', validator: { validate: () => false, defaultMessage: () => 'name cannot be changed: it is generated from label at creation' } })
  name?: unknown;
}
