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
import { AUTH_TYPES, HTTP_METHODS, MAX_PARAMETERS, PARAM_LOCATIONS, PARAM_TYPES, TOOL_TYPES } from './custom-tools.rules';

/** Optional, but when present it may not be null (the column is not nullable). */
const OptionalNonNull = () => ValidateIf((_object: object, value: unknown) => value !== undefined);

const SECRET_MAX = 4096;

// ---------- responses ----------

export class CustomToolParamDto {
  @ApiProperty() name!: string;
  @ApiProperty({ enum: PARAM_TYPES, default: 'string' }) type!: string;
  @ApiPropertyOptional() description?: string;
  @ApiProperty({ default: false }) required!: boolean;
  @ApiProperty({ enum: PARAM_LOCATIONS, description: 'defaults to `query` for GET and `body` otherwise' }) in!: string;
  @ApiPropertyOptional({ description: 'actual HTTP header name, set when `in` = `header`' }) headerName?: string;
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
  @ApiProperty({ pattern: '^tool_[a-f0-9]{24}$' }) id!: string;
  @ApiProperty({ description: 'generated from `label`, prefixed `custom_`; immutable after creation' }) name!: string;
  @ApiProperty() label!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ enum: TOOL_TYPES }) type!: string;
  @ApiProperty({ enum: HTTP_METHODS }) method!: string;
  @ApiProperty({ description: 'may contain `{{param}}` placeholders substituted at execution time' }) url!: string;
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

export class CustomToolParamInput {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(64) name!: string;
  @ApiPropertyOptional({ enum: PARAM_TYPES, default: 'string' }) @OptionalNonNull() @IsIn(PARAM_TYPES) type?: string;
  @ApiPropertyOptional() @OptionalNonNull() @IsString() @MaxLength(1000) description?: string;
  @ApiPropertyOptional({ default: false }) @OptionalNonNull() @IsBoolean() required?: boolean;
  @ApiPropertyOptional({ enum: PARAM_LOCATIONS, description: 'default `query` for GET, `body` otherwise' })
  @OptionalNonNull()
  @IsIn(PARAM_LOCATIONS)
  in?: string;
  @ApiPropertyOptional({ description: 'required when `in` = `header`' }) @OptionalNonNull() @IsString() @MaxLength(128) headerName?: string;
}

export class CustomToolCredentialsInput {
  @ApiPropertyOptional({ description: 'used when `type` = `bearer`', writeOnly: true })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  token?: string;
  @ApiPropertyOptional({ description: 'used when `type` = `api_key`', writeOnly: true })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  apiKey?: string;
  @ApiPropertyOptional({ description: 'header that carries the api key; default `X-API-Key`' })
  @OptionalNonNull()
  @IsString()
  @MaxLength(128)
  header_name?: string;
  @ApiPropertyOptional({ description: 'used when `type` = `basic`', writeOnly: true })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  username?: string;
  @ApiPropertyOptional({ description: 'used when `type` = `basic`', writeOnly: true })
  @OptionalNonNull()
  @IsString()
  @MaxLength(SECRET_MAX)
  password?: string;
}

export class CustomToolAuthInput {
  @ApiProperty({ enum: AUTH_TYPES }) @IsIn(AUTH_TYPES) type!: string;
  @ApiPropertyOptional({
    type: CustomToolCredentialsInput,
    description: 'raw secrets, encrypted at rest and never returned; sending a fresh object rotates them',
  })
  @OptionalNonNull()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomToolCredentialsInput)
  credentials?: CustomToolCredentialsInput;
}

export class CustomToolGroupInput {
  @ApiProperty() @IsString() @IsNotEmpty() @MaxLength(100) name!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) @IsOptional() @IsString() @MaxLength(200) icon?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) @IsOptional() @IsString() @MaxLength(50) color?: string | null;
}

/** Fields shared by create and update; all optional here, `CreateCustomToolDto` makes some required. */
class CustomToolFields {
  @ApiPropertyOptional({ enum: TOOL_TYPES, default: 'read' }) @OptionalNonNull() @IsIn(TOOL_TYPES) type?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  @OptionalNonNull()
  @IsObject()
  headers?: Record<string, string>;
  @ApiPropertyOptional({ type: 'string', nullable: true }) @IsOptional() @IsString() @MaxLength(16384) body_template?: string | null;
  @ApiPropertyOptional({ type: [CustomToolParamInput] })
  @OptionalNonNull()
  @IsArray()
  @ArrayMaxSize(MAX_PARAMETERS)
  @ValidateNested({ each: true })
  @Type(() => CustomToolParamInput)
  parameters?: CustomToolParamInput[];
  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'dot path into the response, e.g. `data.items`' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  response_mapping?: string | null;
  @ApiPropertyOptional({ type: CustomToolAuthInput })
  @OptionalNonNull()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomToolAuthInput)
  auth?: CustomToolAuthInput;
  @ApiPropertyOptional({ type: CustomToolGroupInput, nullable: true })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomToolGroupInput)
  group?: CustomToolGroupInput | null;
}

export class CreateCustomToolDto extends CustomToolFields {
  @ApiProperty({ description: 'human-readable name that should include connector and resource' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  label!: string;
  @ApiProperty({ description: 'addressed to the language model; decides when the tool is called' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(4000)
  description!: string;
  @ApiProperty({ enum: HTTP_METHODS }) @IsIn(HTTP_METHODS) method!: string;
  @ApiProperty({ description: 'absolute http(s) URL; `{{param}}` placeholders allowed outside the host' })
  @IsString()
  @MaxLength(2048)
  url!: string;
}

export class UpdateCustomToolDto extends CustomToolFields {
  @ApiPropertyOptional() @OptionalNonNull() @IsString() @IsNotEmpty() @MaxLength(200) label?: string;
  @ApiPropertyOptional() @OptionalNonNull() @IsString() @IsNotEmpty() @MaxLength(4000) description?: string;
  @ApiPropertyOptional({ enum: HTTP_METHODS }) @OptionalNonNull() @IsIn(HTTP_METHODS) method?: string;
  @ApiPropertyOptional() @OptionalNonNull() @IsString() @MaxLength(2048) url?: string;
  @ApiPropertyOptional() @OptionalNonNull() @IsBoolean() is_active?: boolean;

  /** spec: `name` cannot be changed; declared only to answer with a clear 422 */
  @ApiHideProperty()
  @ValidateIf((_object: object, value: unknown) => value !== undefined)
  @ValidateBy({ name: 'immutable', validator: { validate: () => false, defaultMessage: () => 'name cannot be changed: it is generated from label at creation' } })
  name?: unknown;
}
