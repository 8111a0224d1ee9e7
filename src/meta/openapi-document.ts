import type { INestApplication } from '@nestjs/common';
import { EXACT_JSON_RULES } from '../common/exact-json';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { BEARER_SCHEME } from '../auth/auth.decorators';
import { API_PREFIX } from '../common/api-paths';
import { partialUpdateBodySchemas, schemaRulesByName } from '../common/openapi';
import { HOSTILE_INPUT_RULES, MAX_BODY_DEPTH } from '../common/validation';
import { documentConditionalRequests } from '../conditional/conditional.openapi';
import { documentIdempotency } from '../idempotency/idempotency.openapi';
import { documentResponsesForGenerators } from './openapi-responses';
import { documentRateLimits } from '../rate-limit/rate-limit.openapi';

const API_VERSION = '1.0.0';

type Json = unknown;

/**
 * 3.0's `nullable: true` → 3.1's type arrays (`["string", "null"]`) or a
 * `oneOf` with `{ type: "null" }` for references; strict 3.1 tools ignore
 * `nullable`. Applied to every schema object in the document.
 */
function convertNullable(node: Json): Json {
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
        'every endpoint requires one scope, named in its security requirement and in `x-required-scope`. ' +
        'Query parameters an operation does not list are ignored on every endpoint (a misspelt filter filters nothing); ' +
        'the ones it lists are validated (422 `validation_failed`). Unknown fields in a request body are refused (422). ' +
        `Request bodies are JSON in UTF-8 (\`Content-Encoding\` gzip, deflate or br accepted), an object or array at the top, at most 1 MiB once decompressed (413) ` +
        `and nested at most ${MAX_BODY_DEPTH} levels; text holding U+0000, invalid UTF-8 or an unpaired surrogate is refused (422). ` +
        `${EXACT_JSON_RULES} ` +
        `${HOSTILE_INPUT_RULES} ` +
        'A request body is read only once the request\'s API key is found valid: any other request is answered from its headers alone, ' +
        'its body unread. A body that arrives slower than 1 KiB/s on average ' +
        'after its first 5 s (the defaults) may have its connection closed when the server needs room for a new one. ' +
        'Rate limits count per API key; requests whose key is missing or not valid count against a budget per client IP address (per /64 for IPv6; ' +
        'behind a proxy the server trusts, the address its `X-Forwarded-For` names), which throttles wrong keys only: a valid key is served whatever its address spent.',
    )
    .setVersion(API_VERSION)
    .addServer(`/${API_PREFIX}`)
    .addSecurity(BEARER_SCHEME, { type: 'http', scheme: 'bearer', bearerFormat: 'svc_live_<token>', description: 'An API key of the organization.' })
    .build();
  const generated = SwaggerModule.createDocument(app, config, {
    ignoreGlobalPrefix: true,
    operationIdFactory: (_controller, method) => method,
  });
  let document = generated;
  for (const step of OPENAPI_POST_PROCESSING) document = step.apply(document) ?? document;
  return document;
}

/**
 * Everything that changes the document Nest generates from the decorators,
 * in the order it runs. Per-route facts are declared where the route is
 * (`@RequireScope`, `@Public`, `@ApiEnvelope`, `@ApiErrors`, `@PartialUpdateBody`);
 * what every current and future endpoint gets is added here, and only here.
 * A step changes the document in place or returns a new one. Order matters:
 * the last two skip public operations by their empty `security`, which the
 * third step sets.
 */
const OPENAPI_POST_PROCESSING: ReadonlyArray<{ name: string; apply(document: OpenAPIObject): OpenAPIObject | void }> = [
  { name: 'OpenAPI 3.1: `nullable` becomes a type array or a oneOf with null', apply: toOpenApi31 },
  { name: 'the one server is the public API (x-internal: false)', apply: markServersPublic },
  { name: '@Public() operations need no security', apply: dropSecurityOfPublicOperations },
  { name: 'request bodies: no defaults; 400/408/417/431 on every operation, 413/422 where a body is read', apply: documentRequestBodies },
  { name: 'request bodies: unknown fields refused, rules across fields', apply: documentBodyRules },
  { name: 'Idempotency-Key on every authenticated POST and PATCH', apply: documentIdempotency },
  { name: 'ETag, If-None-Match / 304 and If-Match / 412 where the routes declare them', apply: documentConditionalRequests },
  { name: 'rate-limit headers on every response of every authenticated operation', apply: documentRateLimits },
  { name: 'answers for generated clients: named envelopes, open enums, every field always sent required', apply: documentResponsesForGenerators },
];

function toOpenApi31(generated: OpenAPIObject): OpenAPIObject {
  const document = convertNullable(generated) as OpenAPIObject;
  document.openapi = '3.1.0';
  return document;
}

/** OWASP API9 (inventory): the one server is the public API, meant for clients. */
function markServersPublic(document: OpenAPIObject): void {
  for (const server of document.servers ?? []) (server as unknown as Record<string, unknown>)['x-internal'] = false;
}

/** `@Public()` marks its operation `x-public`; such an operation has an empty security requirement instead. */
function dropSecurityOfPublicOperations(document: OpenAPIObject): void {
  for (const { operation } of operationsOf(document)) {
    const marked = operation as Record<string, unknown>;
    if (marked['x-public'] === true) {
      marked.security = [];
      delete marked['x-public'];
    }
  }
}

type Schema = Record<string, Json>;
type OperationObject = { requestBody?: { content?: Record<string, { schema?: Schema }> }; responses?: Record<string, Json>; security?: unknown[] };
const OPERATION_METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace'];

/** Every operation of the document, with its method and path. */
function operationsOf(document: OpenAPIObject): Array<{ method: string; path: string; operation: OperationObject }> {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Json>)
      .filter(([method, value]) => OPERATION_METHODS.includes(method) && value !== null && typeof value === 'object')
      .map(([method, value]) => ({ method, path, operation: value as OperationObject })),
  );
}

/** Names of the component schemas a schema refers to, directly or through nested schemas. */
function referencedSchemas(node: Json, found: Set<string>, components: Record<string, Schema>): void {
  if (Array.isArray(node)) return node.forEach((item) => referencedSchemas(item, found, components));
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
      const name = value.slice('#/components/schemas/'.length);
      if (!found.has(name)) {
        found.add(name);
        referencedSchemas(components[name], found, components);
      }
    } else if (key !== 'example' && key !== 'examples' && key !== 'enum' && key !== 'default') {
      referencedSchemas(value, found, components);
    }
  }
}

/** Removes every `default` keyword of a schema and its subschemas (not following $refs); each one is handed to `found`. */
function stripDefaults(node: Json, found: (schema: Schema, value: Json) => void): void {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  const schema = node as Schema;
  if ('default' in schema) {
    found(schema, schema.default);
    delete schema.default;
  }
  for (const child of Object.values((schema.properties ?? {}) as Record<string, Json>)) stripDefaults(child, found);
  for (const key of ['items', 'additionalProperties', 'not']) stripDefaults(schema[key], found);
  for (const key of ['oneOf', 'anyOf', 'allOf']) if (Array.isArray(schema[key])) (schema[key] as Json[]).forEach((child) => stripDefaults(child, found));
}

/**
 * Request bodies, as clients generated from the document see them:
 *
 * - No `default` keyword in any schema a request body uses. A generator
 *   such as openapi-typescript (default options) turns a property with a
 *   default into a required one, so a client would have to send `color` on
 *   every create — and, on a PATCH, silently reset it. Create schemas keep
 *   their defaults in the description ("Default: …"); update schemas
 *   (classes marked `@PartialUpdateBody()`) have none, because an omitted field is left unchanged.
 * - 413 `payload_too_large`, and 422 for a malformed body on those that
 *   take none, on every operation that takes a key: its body is read
 *   before routing reaches the pipe. A public operation reads no body (it
 *   is answered from its headers, request-hooks.ts), so it lists neither.
 * - 408 `request_timeout` on every operation: headers not received within
 *   HTTP_HEADERS_TIMEOUT_MS, whatever the path; on an operation that takes
 *   a key, also a body not received within HTTP_REQUEST_TIMEOUT_MS.
 * - 400 `bad_request`, 417 `expectation_failed` and 431 `headers_too_large`
 *   on every operation: the HTTP parser and the request hooks answer them
 *   before routing (src/http/client-errors.ts), whatever the path.
 */
function documentRequestBodies(document: OpenAPIObject): void {
  const components = (document.components?.schemas ?? {}) as Record<string, Schema>;
  const used = new Set<string>();
  for (const { operation } of operationsOf(document)) {
    for (const media of Object.values(operation.requestBody?.content ?? {})) {
      referencedSchemas(media.schema, used, components);
      stripDefaults(media.schema, () => undefined);
    }
    // a keyed request's body is read before routing (so an oversized or malformed one is refused
    // the same way everywhere), with or without a body of its own; a public one's never is
    const readsBody = !(Array.isArray(operation.security) && operation.security.length === 0);
    const responses = (operation.responses ??= {});
    const errorEnvelope = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } };
    responses['408'] ??= {
      description: readsBody
        ? 'The request was not received within the server\'s request timeout (`request_timeout`, 30 s by default; its headers within 15 s); the connection is closed.'
        : 'The request headers were not received within the server\'s headers timeout (`request_timeout`, 15 s by default); the connection is closed.',
      content: errorEnvelope,
    };
    if (readsBody) responses['413'] ??= { description: 'Request body over 1 MiB (`payload_too_large`), whatever the method.', content: errorEnvelope };
    responses['400'] ??= {
      description:
        'Not valid HTTP/1.1 (`bad_request`): a bare CR or other control byte in a header, `Content-Length` beside `Transfer-Encoding`, no `Host`, ' +
        'two `Host` lines or one that is not `host[:port]`, two `Authorization` lines; the connection is closed.',
      content: errorEnvelope,
    };
    responses['417'] ??= { description: 'An `Expect` header other than `100-continue` (`expectation_failed`).', content: errorEnvelope };
    responses['431'] ??= {
      description: 'The request headers exceed 16 KiB (`headers_too_large`); the connection is closed.',
      content: errorEnvelope,
    };
    if (readsBody) {
      responses['422'] ??= {
        description: 'Validation failed (`validation_failed`): this operation takes no body, but a body sent with it must still be valid JSON.',
        content: errorEnvelope,
      };
    }
  }
  const partialUpdates = partialUpdateBodySchemas();
  for (const name of used) {
    const isUpdate = partialUpdates.has(name);
    stripDefaults(components[name], (schema, value) => {
      if (isUpdate) return;
      const note = `Default: \`${typeof value === 'string' ? value : JSON.stringify(value)}\`.`;
      schema.description = typeof schema.description === 'string' && schema.description !== '' ? `${schema.description} ${note}` : note;
    });
  }
}

/** Component schemas that only request bodies use (a response schema stays open to new fields). */
function requestOnlySchemas(document: OpenAPIObject): Set<string> {
  const components = (document.components?.schemas ?? {}) as Record<string, Schema>;
  const inRequests = new Set<string>();
  const inResponses = new Set<string>();
  for (const { operation } of operationsOf(document)) {
    for (const media of Object.values(operation.requestBody?.content ?? {})) referencedSchemas(media.schema, inRequests, components);
    referencedSchemas(operation.responses, inResponses, components);
  }
  return new Set([...inRequests].filter((name) => !inResponses.has(name)));
}

/**
 * A class's rule across fields as one `allOf` entry beside its properties.
 * openapi-typescript types a sibling `anyOf` as a union with the object (and
 * a branch that only lists `required` as `unknown`), so the whole body became
 * `unknown`; an `allOf` entry becomes an intersection, and a branch that
 * carries its required fields' schemas becomes `{ instructions: string }`.
 * The branch gets the class's own field schemas without their annotations
 * (each field's description stays where it is).
 */
function ruleEntry(name: string, rules: Record<string, unknown>, properties: Record<string, Schema>): Schema {
  const typed = (branch: Schema): Schema => {
    if (!Array.isArray(branch.required) || branch.properties !== undefined) return branch;
    const fields = (branch.required as string[]).map((field) => {
      const property = properties[field];
      if (!property) throw new Error(`@SchemaRules of ${name} names ${field}, which is not one of its fields`);
      const { description: _description, title: _title, example: _example, examples: _examples, default: _default, ...constraints } = property;
      return [field, constraints];
    });
    return { ...branch, properties: Object.fromEntries(fields) };
  };
  return Object.fromEntries(Object.entries(rules).map(([keyword, value]) => [keyword, Array.isArray(value) ? (value as Schema[]).map(typed) : value]));
}

/**
 * What the validation pipe enforces on a body, stated where JSON Schema can:
 * every body class refuses unknown fields (`additionalProperties: false`;
 * free-form fields inside declare their own `additionalProperties`), and a
 * class's rules across fields (`@SchemaRules`, e.g. the instructions rule of
 * AgentCreate as `anyOf`) are added to its schema as an `allOf` entry. A
 * generated client or a validating proxy then refuses what the server
 * refuses. Schemas shared with responses are left open, so a response may
 * gain fields.
 */
function documentBodyRules(document: OpenAPIObject): void {
  const components = (document.components?.schemas ?? {}) as Record<string, Schema>;
  for (const name of requestOnlySchemas(document)) {
    const schema = components[name];
    if (schema && schema.type === 'object' && schema.additionalProperties === undefined) schema.additionalProperties = false;
  }
  for (const [name, rules] of schemaRulesByName()) {
    const schema = components[name];
    if (!schema) continue;
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    schema.allOf = [...((schema.allOf as Schema[] | undefined) ?? []), ruleEntry(name, rules, properties)];
  }
}
