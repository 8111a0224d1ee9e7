import { applyDecorators, SetMetadata, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { ErrorCode, statusOf } from './api-error';
import { DeleteAcknowledgementDto } from './delete-ack.dto';

/**
 * Set by `ApiEnvelope` on routes whose `data` is one resource: their answers
 * carry an `ETag` (src/conditional/entity-tag.interceptor.ts reads it).
 */
export const TAGGED_REPRESENTATION = 'conditional:tagged-representation';

class ErrorBody {
  @ApiProperty({ enum: Object.values(ErrorCode), description: 'Stable machine-readable code: branch on this.' })
  code!: string;

  @ApiProperty({ description: 'Human-readable; may change between releases.' })
  message!: string;

  @ApiProperty({ type: 'string', nullable: true })
  request_id!: string | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'Extra detail; for `validation_failed`, `fields` maps each offending field to its problems (at most 100 fields named) ' +
      'and `field_count` says how many fields had a problem in all.',
  })
  details?: Record<string, unknown>;
}

class ErrorEnvelope {
  @ApiProperty({ type: ErrorBody })
  error!: ErrorBody;
}

class ResponseMeta {
  @ApiProperty({ type: 'string', nullable: true, description: 'Equals the X-Request-ID response header.' })
  request_id!: string | null;
}

class ListResponseMeta extends ResponseMeta {
  @ApiProperty({ type: 'string', nullable: true, description: 'Pass back as `cursor` for the next page; null on the last page.' })
  next_cursor!: string | null;
}

const REQUEST_ID_HEADER_DOC = {
  'X-Request-ID': { description: 'Equals `request_id` in the body.', schema: { type: 'string' } },
};

const RATE_LIMIT_HEADERS_DOC = {
  'X-RateLimit-Limit': { schema: { type: 'integer' }, description: 'Requests allowed in the more constraining window.' },
  'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Requests left in that window.' },
  'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Unix epoch seconds at which that window resets.' },
};

const ETAG_HEADER_DOC = {
  ETag: {
    description:
      'Strong entity tag of `data` (the resource as this answer shows it): it changes whenever that representation changes, and only then. ' +
      'Send it back in `If-None-Match` on a GET (304 while unchanged) or in `If-Match` on a PATCH or DELETE (412 once changed).',
    schema: { type: 'string', example: '"q3Nwz1d1hAyY2n6sJ0S8M6cGk3bJ5mKq0mJcF8fQ9aE"' },
  },
};

/**
 * Success response in the envelope: `data` is `model` (or an array of it for
 * lists). `meta.next_cursor` is documented when `paginated` says so, and by
 * default for lists: `{ list: true, paginated: false }` is a list without
 * pagination (GET /team); `{ paginated: true }` a single resource
 * whose inner series is paginated. A plain single resource is tagged: its
 * answers carry an `ETag` (src/conditional/entity-tag.interceptor.ts); a
 * delete acknowledgement is not the resource, so it is not.
 */
export function ApiEnvelope(
  model: Type<unknown>,
  options: { status?: 200 | 201; list?: boolean; paginated?: boolean; description?: string } = {},
) {
  const data = options.list ? { type: 'array', items: { $ref: getSchemaPath(model) } } : { $ref: getSchemaPath(model) };
  const meta = { $ref: getSchemaPath((options.paginated ?? options.list) ? ListResponseMeta : ResponseMeta) };
  const tagged = !options.list && !options.paginated && model !== DeleteAcknowledgementDto;
  return applyDecorators(
    ...(tagged ? [SetMetadata(TAGGED_REPRESENTATION, true)] : []),
    ApiExtraModels(model, ResponseMeta, ListResponseMeta),
    ApiResponse({
      status: options.status ?? 200,
      description: options.description ?? 'Success',
      headers: tagged ? { ...REQUEST_ID_HEADER_DOC, ...ETAG_HEADER_DOC } : REQUEST_ID_HEADER_DOC,
      schema: { type: 'object', required: ['data', 'meta'], properties: { data, meta }, additionalProperties: false },
    }),
  );
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  401: 'Missing, malformed, wrong, revoked or expired API key (`unauthorized`).',
  403: 'The key lacks the required scope (`insufficient_scope`), or the organization is inactive (`org_inactive`).',
  404: 'Not found.',
  409: 'Conflict (`conflict`): the request collides with a stored resource.',
  413: 'Request body over 1 MiB (`payload_too_large`).',
  422: 'Validation failed (`validation_failed`).',
  429: 'Rate limit exceeded (`rate_limited`).',
  500: 'Unexpected error (`internal_error`).',
  503: 'Temporarily unavailable (`service_unavailable`, with `Retry-After`): the database is unreachable or did not answer in time, or the organization (or the API key) kept its limit of requests in progress (by default half the database pool per organization, one less per key, per instance) busy for the whole time the request could wait; retry with backoff.',
};

/** A status with the description of this operation's own cases, naming their codes. */
interface ErrorCase {
  status: number;
  description: string;
}

/** Error responses in the error envelope, by status (or status and description). */
export function ApiErrors(...entries: Array<number | ErrorCase>) {
  return applyDecorators(
    ApiExtraModels(ErrorEnvelope),
    ...entries.map((entry) => ({ status: typeof entry === 'number' ? entry : entry.status, description: typeof entry === 'number' ? undefined : entry.description })).map(({ status, description }) =>
      ApiResponse({
        status,
        description: description ?? ERROR_DESCRIPTIONS[status] ?? 'Error',
        headers:
          status === 429
            ? { ...REQUEST_ID_HEADER_DOC, ...RATE_LIMIT_HEADERS_DOC, 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait.' } }
            : REQUEST_ID_HEADER_DOC,
        schema: { $ref: getSchemaPath(ErrorEnvelope) },
      }),
    ),
  );
}

/** Codes that the common statuses of authenticated endpoints carry. */
export const COMMON_AUTH_ERRORS = [statusOf(ErrorCode.Unauthorized), 403, statusOf(ErrorCode.RateLimited), 500, 503];

const PARTIAL_UPDATE_BODIES = new Set<Type<unknown>>();

/**
 * Marks the body class of a PATCH: every field may be left out, and a field
 * left out stays as it is. Its schema in the served document carries no
 * `default` at all (a generated client would otherwise send the default and
 * reset the field); a create body keeps each default as "Default: …" in the
 * field's description. test/openapi.e2e-spec.ts fails while a PATCH body
 * lacks this marker, or a marked class is no PATCH body.
 */
export function PartialUpdateBody(): ClassDecorator {
  return (target) => {
    PARTIAL_UPDATE_BODIES.add(target as unknown as Type<unknown>);
  };
}

/** Component schema names of the classes marked `@PartialUpdateBody()`. */
export function partialUpdateBodySchemas(): Set<string> {
  return new Set([...PARTIAL_UPDATE_BODIES].map((model) => getSchemaPath(model).slice('#/components/schemas/'.length)));
}

const SCHEMA_RULES = new Map<Type<unknown>, Record<string, unknown>>();

/**
 * A rule of a body class that spans fields (one of two fields required),
 * stated in its served schema as JSON Schema keywords (`anyOf`…), served as
 * one `allOf` entry beside what the field decorators generate (see
 * src/meta/openapi-document.ts). The class still enforces it with its
 * validators: this says it in the document, where generated clients and
 * validating proxies read it.
 */
export function SchemaRules(rules: Record<string, unknown>): ClassDecorator {
  return (target) => {
    SCHEMA_RULES.set(target as unknown as Type<unknown>, rules);
  };
}

/** Component schema name → the keywords its class declared with `@SchemaRules`. */
export function schemaRulesByName(): Map<string, Record<string, unknown>> {
  return new Map([...SCHEMA_RULES].map(([model, rules]) => [getSchemaPath(model).slice('#/components/schemas/'.length), rules]));
}

const RULES_BEYOND_SCHEMA = new Map<Type<unknown>, Readonly<Record<string, string>>>();

/**
 * The fields of a request body a refusal may name although the body follows
 * its served schema: a reference to another row, a rule on stored data, a
 * rule judged by code (the outbound-URL policy). JSON Schema cannot say
 * these; each is `field path → the rule`, the path covering the field, its
 * items and what is under it (`tools` covers `tools[0].name`). Every class
 * a route takes as its body declares them, `{}` for none, so
 * test/request-schemas.e2e-spec.ts can tell such a refusal from a schema
 * that promises less than the server enforces.
 */
export function RulesBeyondSchema(fields: Readonly<Record<string, string>>): ClassDecorator {
  return (target) => {
    RULES_BEYOND_SCHEMA.set(target as unknown as Type<unknown>, fields);
  };
}

/** Component schema name → the fields its class declared with `@RulesBeyondSchema`. */
export function rulesBeyondSchemaByName(): Map<string, Readonly<Record<string, string>>> {
  return new Map([...RULES_BEYOND_SCHEMA].map(([model, fields]) => [getSchemaPath(model).slice('#/components/schemas/'.length), fields]));
}
