import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsObject, IsString } from 'class-validator';
import { accepted } from '../common/api-error';
import { TextField } from '../common/field';
import { BOUNDS, idPattern } from '../common/input-bounds';
import { BodyPrecheck, OptionalNonNull } from '../common/validation';
import { RulesBeyondSchema } from '../common/openapi';
import { OUTBOUND_URL_RULES } from '../../libs/url-policy/url-policy';
import { checkCreatableType, MAX_CRAWL_DEPTH, MAX_PAGES, MAX_PATTERNS, PATH_PATTERN, SOURCE_CONFIG_RULES } from './sources.rules';

const PATH_PATTERN_SCHEMA = { type: 'string', minLength: 1, maxLength: BOUNDS.url, pattern: PATH_PATTERN } as const;

export const SOURCE_TYPES = ['upload', 'website', 'webpage', 'connector'] as const;
const CREATABLE_SOURCE_TYPES = ['website', 'webpage'] as const;
export const SYNC_STATUSES = ['ready', 'fetching', 'syncing', 'error'] as const;

export class SourceDto {
  @ApiProperty({ pattern: idPattern('source') }) id!: string;
  @ApiProperty({ enum: SOURCE_TYPES }) type!: string;
  @ApiProperty() name!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) connector_id?: string | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) connector_type?: string | null;
  @ApiProperty({ enum: SYNC_STATUSES }) sync_status!: string;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) last_sync_at?: string | null;
  @ApiPropertyOptional({ type: 'integer', nullable: true }) document_count?: number | null;
  @ApiProperty() is_active!: boolean;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) updated_at?: string | null;
}

/** `type` is judged before the other fields: the validation pipe runs the `@BodyPrecheck` first. */
@BodyPrecheck((body) => accepted(checkCreatableType(body)))
@RulesBeyondSchema({ 'config.url': 'the outbound-URL policy (private addresses, DNS) is code' })
export class SourceCreateDto {
  /** documented as the two types POST creates; the other two are answered by the precheck (409, 422) */
  @ApiProperty({ enum: CREATABLE_SOURCE_TYPES, description: '`upload` → 409 (the singleton exists); `connector` → 422' })
  @IsString()
  @IsIn(SOURCE_TYPES, { message: 'type must be website or webpage' })
  type!: string;

  /** a missing name is one of the problems `createSource` lists, with those of `config` */
  @TextField({ optional: true, requiredByService: true, minLength: 1, maxLength: BOUNDS.name, description: 'display name' })
  name?: string;

  /** each key is judged by `buildSourceConfig`, which the fixture loader runs too */
  @ApiProperty({
    type: 'object',
    properties: {
      url: { type: 'string', maxLength: BOUNDS.url, description: `absolute http(s) URL; required for website and webpage. ${OUTBOUND_URL_RULES}` },
      indexed: {
        type: 'boolean',
        default: false,
        description: 'when true the content is chunked and embedded and becomes searchable through the `search_knowledge` tool',
      },
      max_pages: { type: 'integer', format: 'int32', minimum: 1, maximum: MAX_PAGES, description: 'read for a `website`: the most pages a crawl fetches' },
      crawl: {
        type: 'object',
        description: 'read for a `website`: which paths a crawl follows',
        properties: {
          include: { type: 'array', maxItems: MAX_PATTERNS, items: PATH_PATTERN_SCHEMA, description: 'path patterns to follow' },
          exclude: { type: 'array', maxItems: MAX_PATTERNS, items: PATH_PATTERN_SCHEMA, description: 'path patterns to skip' },
          max_depth: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_CRAWL_DEPTH, description: 'links followed from `url`' },
        },
        additionalProperties: false,
      },
    },
    required: ['url'],
    additionalProperties: true,
    description: `type-specific; additional keys allowed. Required in practice: \`config.url\` is required for both types this endpoint creates. ${SOURCE_CONFIG_RULES}`,
  })
  @OptionalNonNull()
  @IsObject()
  config?: Record<string, unknown>;
}
