import { ApiHideProperty, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsObject, ValidateBy, ValidateIf } from 'class-validator';
import { BOUNDS, idPattern } from '../common/input-bounds';
import { PartialUpdateBody, RulesBeyondSchema } from '../common/openapi';
import { OptionalNonNull, UnknownKeysUnnamed } from '../common/validation';
import { BooleanField, EnumField, ObjectField, ObjectListField, TextField } from '../common/field';
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
  @TextField({
    minLength: 1,
    maxLength: BOUNDS.toolParameterName,
    ruledPattern: PARAM_NAME.source,
    description: `1 to ${BOUNDS.toolParameterName} letters, digits, \`_\`, \`.\` or \`-\` (the characters of a \`{{placeholder}}\`); unique within the tool`,
  })
  name!: string;
  @EnumField({ optional: true, values: PARAM_TYPES, default: 'string' }) type?: string;
  @TextField({ optional: true, maxLength: BOUNDS.toolParameterDescription }) description?: string;
  @BooleanField({ optional: true, default: false }) required?: boolean;
  @EnumField({ optional: true, values: PARAM_LOCATIONS, description: 'default `query` for GET, `body` otherwise' }) in?: string;
  @TextField({
    optional: true,
    minLength: 1,
    maxLength: BOUNDS.headerName,
    ruledPattern: HEADER_NAME.source,
    description: `actual HTTP header name (an HTTP token), used when \`in\` = \`header\`; defaults to the parameter's \`name\`, which is returned and then follows the same rule. ${RESERVED_HEADER_RULES}`,
  })
  headerName?: string;
}

/** A client may paste a secret where a field name goes: an unknown key is refused without its name. */
@UnknownKeysUnnamed('holds a field other than token, apiKey, header_name, username and password (its name is not repeated: it may be a secret)')
export class CustomToolCredentialsInputDto {
  @TextField({ optional: true, writeOnly: true, maxLength: SECRET_MAX, description: `used when \`type\` = \`bearer\`; dropped (never stored) otherwise. ${SECRET_RULE}` })
  token?: string;
  @TextField({ optional: true, writeOnly: true, maxLength: SECRET_MAX, description: `used when \`type\` = \`api_key\`; dropped (never stored) otherwise. ${SECRET_RULE}` })
  apiKey?: string;
  @TextField({
    optional: true,
    minLength: 1,
    maxLength: BOUNDS.headerName,
    ruledPattern: HEADER_NAME.source,
    description: `header that carries the api key (an HTTP token); default \`X-API-Key\`; used when \`type\` = \`api_key\`. ${RESERVED_HEADER_RULES}`,
  })
  header_name?: string;
  @TextField({
    optional: true,
    writeOnly: true,
    maxLength: SECRET_MAX,
    ruledPattern: '^[^:]*$',
    description: `used when \`type\` = \`basic\`; dropped (never stored) otherwise. ${SECRET_RULE} No colon: basic authentication joins user and password with one.`,
  })
  username?: string;
  @TextField({ optional: true, writeOnly: true, maxLength: SECRET_MAX, description: `used when \`type\` = \`basic\`; dropped (never stored) otherwise. ${SECRET_RULE}` })
  password?: string;
}

export class CustomToolAuthInputDto {
  @EnumField({ values: AUTH_TYPES }) type!: string;
  @ObjectField({
    optional: true,
    of: CustomToolCredentialsInputDto,
    description:
      'raw secrets, encrypted at rest and never returned. Optional: without it a tool keeps its stored secrets when `type` is unchanged and drops them when `type` changes. ' +
      'A fresh object replaces the stored one: fields it lacks are absent afterwards, and fields the `type` does not use are dropped (never stored or returned).',
  })
  credentials?: CustomToolCredentialsInputDto;
}

class CustomToolGroupInputDto {
  @TextField({ minLength: 1, maxLength: BOUNDS.groupName }) name!: string;
  @TextField({ optional: true, nullable: true, maxLength: BOUNDS.groupIcon }) icon?: string | null;
  @TextField({ optional: true, nullable: true, maxLength: BOUNDS.groupColor }) color?: string | null;
}

/** Fields shared by create and update; all optional here, `CustomToolCreateDto` makes some required. */
class CustomToolFields {
  @EnumField({ optional: true, values: TOOL_TYPES, default: 'read' }) type?: string;
  /** each header's name and value are judged by the rules, which name the header at fault */
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
  @TextField({
    optional: true,
    nullable: true,
    maxLength: BOUNDS.bodyTemplate,
    description:
      'JSON string template for POST, PUT, PATCH bodies; supports `{{param}}` (blanks inside the braces allowed; undeclared ones kept as written). ' +
      'A placeholder inside a JSON string is replaced by the value as text, a bare one by the value as JSON; the template must be valid JSON once placeholders are substituted.',
  })
  body_template?: string | null;
  @ObjectListField({
    optional: true,
    of: CustomToolParamInputDto,
    maxItems: BOUNDS.toolParameters,
    description: `at most ${BOUNDS.toolParameters}; names unique within the tool. Placeholders need no declared parameter.`,
  })
  parameters?: CustomToolParamInputDto[];
  @TextField({ optional: true, nullable: true, maxLength: BOUNDS.responseMapping, description: 'dot path into the response, e.g. `data.items`' })
  response_mapping?: string | null;
  @ObjectField({ optional: true, of: CustomToolAuthInputDto }) auth?: CustomToolAuthInputDto;
  @ObjectField({ optional: true, nullable: true, of: CustomToolGroupInputDto }) group?: CustomToolGroupInputDto | null;
}

/** Rules of both custom-tool bodies that JSON Schema cannot express. */
const CUSTOM_TOOL_RULES = {
  headers: 'outbound header names and values are judged by code (reserved names, allowed bytes)',
  parameters: 'names unique within the tool; header names judged by code',
  url: 'the outbound-URL policy (private addresses, DNS) is code',
  body_template: 'valid JSON once its placeholders are substituted',
};

@RulesBeyondSchema({ ...CUSTOM_TOOL_RULES, name: 'unique within the organization' })
export class CustomToolCreateDto extends CustomToolFields {
  @TextField({ minLength: 1, maxLength: BOUNDS.name, description: 'human-readable name that should include connector and resource' }) label!: string;
  @TextField({ minLength: 1, maxLength: BOUNDS.toolDescription, description: 'addressed to the language model; decides when the tool is called' }) description!: string;
  @EnumField({ values: HTTP_METHODS }) method!: string;
  @TextField({ maxLength: BOUNDS.url, description: URL_DESCRIPTION }) url!: string;
}

@PartialUpdateBody()
@RulesBeyondSchema(CUSTOM_TOOL_RULES)
export class CustomToolUpdateDto extends CustomToolFields {
  @TextField({ optional: true, minLength: 1, maxLength: BOUNDS.name }) label?: string;
  @TextField({ optional: true, minLength: 1, maxLength: BOUNDS.toolDescription }) description?: string;
  @EnumField({ optional: true, values: HTTP_METHODS }) method?: string;
  @TextField({ optional: true, maxLength: BOUNDS.url, description: URL_DESCRIPTION }) url?: string;
  @BooleanField({ optional: true }) is_active?: boolean;

  /** `name` cannot be changed; declared only to answer with a clear 422 */
  @ApiHideProperty()
  @ValidateIf((_object: object, value: unknown) => value !== undefined)
  @ValidateBy({ name: 'immutable', validator: { validate: () => false, defaultMessage: () => 'name cannot be changed: it is generated from label at creation' } })
  name?: unknown;
}
