import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { BEARER_SCHEME } from '../auth/auth.decorators';
import { API_PREFIX } from '../common/api-paths';
import { documentIdempotency } from '../idempotency/idempotency.openapi';
import { documentRateLimits } from '../rate-limit/rate-limit.openapi';

export const API_VERSION = '1.0.0';

type Json = unknown;

/**
 * 3.0's `nullable: true` → 3.1's type arrays (`["string", "null"]`) or a
 * `oneOf` with `{ type: "null" }` for references; strict 3.1 tools ignore
 * `nullable`. Applied to every schema object in the document.
 */
export function convertNullable(node: Json): Json {
  if (Array.isArray(node)) return node.map(convertNullable);
  if (node === null || typeof node !== 'object') return node;
  const source = node as Record<string, Json>;
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === 'nullable') continue;
    // `example`s and `enum`s are data, not schemas: copy as they are
    out[key] = key === 'example' || key === 'examples' || key === 'enum' || key === 'default' ? value : convertNullable(value);
  }
  if (source.nullable !== true) return out;

  // a typed $ref/allOf/oneOf must not get a type array: `null` would still fail the subschema
  const composed = out.$ref !== undefined || out.allOf !== undefined || out.oneOf !== undefined || out.anyOf !== undefined;
  if (typeof out.type === 'string' && !composed) {
    out.type = [out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  if (Array.isArray(out.type) && !composed) {
    if (!out.type.includes('null')) out.type = [...out.type, 'null'];
    return out;
  }
  // a $ref / allOf / oneOf schema: wrap it, keeping the annotations outside
  const { description, title, default: fallback, ...schema } = out;
  const wrapped: Record<string, Json> = { oneOf: [schema.allOf && Object.keys(schema).length === 1 && Array.isArray(schema.allOf) && schema.allOf.length === 1 ? schema.allOf[0] : schema, { type: 'null' }] };
  if (description !== undefined) wrapped.description = description;
  if (title !== undefined) wrapped.title = title;
  if (fallback !== undefined) wrapped.default = fallback;
  return wrapped;
}

/** The served description: generated from the decorators, then made valid OpenAPI 3.1. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Agent Platform REST API')
    .setDescription(
      'Public REST API of the Agent Platform. Every request except `GET /` and `GET /openapi.json` needs `Authorization: Bearer <API_KEY>`; ' +
        'every endpoint requires one scope, named in its security requirement and in `x-required-scope`.',
    )
    .setVersion(API_VERSION)
    .addServer(`/${API_PREFIX}`)
    .addSecurity(BEARER_SCHEME, { type: 'http', scheme: 'bearer', bearerFormat: 'svc_live_<token>', description: 'An API key of the organization.' })
    .build();
  const generated = SwaggerModule.createDocument(app, config, {
    ignoreGlobalPrefix: true,
    operationIdFactory: (_controller, method) => method,
  });
  const document = convertNullable(generated) as OpenAPIObject & { jsonSchemaDialect?: string };
  document.openapi = '3.1.0';
  // OWASP API9 (inventory): the one server is the public API, meant for clients
  for (const server of document.servers ?? []) (server as unknown as Record<string, unknown>)['x-internal'] = false;
  for (const pathItem of Object.values(document.paths)) {
    for (const operation of Object.values(pathItem) as Array<Record<string, unknown>>) {
      if (operation && typeof operation === 'object' && operation['x-public'] === true) {
        operation.security = [];
        delete operation['x-public'];
      }
    }
  }
  // cross-cutting behaviour every current and future endpoint gets
  documentIdempotency(document);
  documentRateLimits(document);
  return document;
}
