import type { OpenAPIObject } from '@nestjs/swagger';

type Json = unknown;
type Schema = Record<string, Json>;
type Operation = { requestBody?: Json; parameters?: Json; responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> };

const SCHEMA_REF = '#/components/schemas/';
const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

/**
 * Response fields that an answer may leave out, by schema: every other
 * property of a response-only schema is present in every answer (the
 * mappers write each field, null when empty), so it is `required` there.
 * test/support/response-shapes.ts checks both against every answer the e2e
 * suite gets.
 */
export const MAY_BE_ABSENT: Record<string, { fields: string[]; why: string }> = {
  ErrorBody: { fields: ['details'], why: 'only errors with machine-readable detail (validation_failed) carry it' },
  ConversationDetailDto: { fields: ['trigger_payload'], why: 'only with include_trigger_payload=true' },
  CustomToolParamDto: { fields: ['description', 'headerName'], why: 'sent as the tool was written: only when given' },
  DataSourceRefDto: { fields: ['documents'], why: 'sent only for a reference that names documents (scope `selected`)' },
  ConnectorToolDto: { fields: ['label', 'description', 'type', 'requires_confirmation', 'disabled'], why: "the connector's tool list as stored: only the keys it has" },
};

/** Names given to open string types (the rest are `<Schema><Property>`). */
const OPEN_ENUM_NAMES: Record<string, string> = { 'ErrorBody.code': 'ErrorCode' };

function operations(document: OpenAPIObject): Operation[] {
  return Object.values(document.paths).flatMap((item) =>
    Object.entries(item as Record<string, Json>)
      .filter(([method, value]) => METHODS.includes(method) && value !== null && typeof value === 'object')
      .map(([, value]) => value as Operation),
  );
}

/** Component names a value refers to, directly or through the components it names. */
function collectRefs(node: Json, found: Set<string>, components: Record<string, Schema>): void {
  if (Array.isArray(node)) return node.forEach((item) => collectRefs(item, found, components));
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string' && value.startsWith(SCHEMA_REF)) {
      const name = value.slice(SCHEMA_REF.length);
      if (!found.has(name)) {
        found.add(name);
        collectRefs(components[name], found, components);
      }
    } else if (key !== 'example' && key !== 'examples' && key !== 'enum' && key !== 'default') {
      collectRefs(value, found, components);
    }
  }
}

/** The component schemas only answers use: a request's schema keeps its optional fields and closed enums. */
export function responseOnlySchemas(document: OpenAPIObject): Set<string> {
  const components = (document.components?.schemas ?? {}) as Record<string, Schema>;
  const inRequests = new Set<string>();
  const inResponses = new Set<string>();
  for (const operation of operations(document)) {
    collectRefs(operation.requestBody, inRequests, components);
    collectRefs(operation.parameters, inRequests, components);
    collectRefs(operation.responses, inResponses, components);
  }
  return new Set([...inResponses].filter((name) => !inRequests.has(name)));
}

const pascal = (text: string) => text.replace(/(^|[_-])([a-z])/g, (_m, _sep, letter: string) => letter.toUpperCase());
const baseName = (schema: string) => schema.replace(/Dto$/, '');

/**
 * Success envelopes as named components (`AgentResponse`, `AgentListResponse`),
 * so generated clients do not invent names such as `ListAgentsResponse200`.
 */
function nameEnvelopes(document: OpenAPIObject): void {
  const components = (document.components!.schemas ??= {}) as Record<string, Json>;
  for (const operation of operations(document)) {
    for (const response of Object.values(operation.responses ?? {})) {
      const media = response.content?.['application/json'];
      const schema = media?.schema;
      const data = (schema?.properties as Record<string, Schema> | undefined)?.data;
      if (!schema || !data || schema.$ref) continue;
      const items = data.items as Schema | undefined;
      const ref = (items?.$ref ?? data.$ref) as string | undefined;
      if (!ref) continue;
      const name = `${baseName(ref.slice(SCHEMA_REF.length))}${items ? 'List' : ''}Response`;
      const existing = components[name];
      if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(schema)) {
        throw new Error(`two different success envelopes would both be named ${name}`);
      }
      components[name] = schema;
      media!.schema = { $ref: `${SCHEMA_REF}${name}` };
    }
  }
}

/**
 * Every string enum of a response-only schema becomes an open string type: a
 * named component with the known values, or any other string. The contract
 * says the list of error codes is not complete, and a client generated
 * today must still read an answer with a value added later (a closed enum
 * makes generated parsers throw). Request schemas keep their closed enums:
 * the service refuses other values.
 */
function openResponseEnums(document: OpenAPIObject, responseOnly: Set<string>): void {
  const components = document.components!.schemas as Record<string, Schema>;
  const named = new Map<string, string>();
  // the error code first: it is the one every client branches on
  const order = [...responseOnly].sort((a, b) => Number(b === 'ErrorBody') - Number(a === 'ErrorBody'));
  for (const schemaName of order) {
    const properties = (components[schemaName]?.properties ?? {}) as Record<string, Schema>;
    for (const [property, schema] of Object.entries(properties)) {
      const values = Array.isArray(schema.enum) ? (schema.enum as Json[]) : null;
      if (!values) continue;
      const strings = values.filter((value): value is string => typeof value === 'string');
      if (strings.length === 0 || strings.length + values.filter((value) => value === null).length !== values.length) continue;
      const nullable = values.includes(null);
      const key = JSON.stringify([...strings].sort());
      let name = named.get(key);
      if (!name) {
        name = OPEN_ENUM_NAMES[`${schemaName}.${property}`] ?? `${baseName(schemaName)}${pascal(property)}`;
        components[name] = {
          type: 'string',
          enum: strings,
          description: `Values known today. ${schemaName === 'ErrorBody' ? 'The list is not complete: branch on the codes you handle and treat others by status.' : 'More may be added: treat a value not listed here as unknown, not as an error.'}`,
        };
        named.set(key, name);
      }
      const open: Schema = { anyOf: [{ $ref: `${SCHEMA_REF}${name}` }, { type: 'string' }, ...(nullable ? [{ type: 'null' }] : [])] };
      for (const annotation of ['description', 'example', 'title']) if (schema[annotation] !== undefined) open[annotation] = schema[annotation];
      properties[property] = open;
    }
  }
}

/** Every field of a response-only schema that every answer carries is `required` (nullable where it may be null). */
function requireAlwaysPresentFields(document: OpenAPIObject, responseOnly: Set<string>): void {
  const components = document.components!.schemas as Record<string, Schema>;
  for (const name of responseOnly) {
    const schema = components[name];
    const properties = Object.keys((schema?.properties ?? {}) as Record<string, Json>);
    if (properties.length === 0) continue;
    const absent = new Set(MAY_BE_ABSENT[name]?.fields ?? []);
    schema.required = properties.filter((property) => !absent.has(property));
  }
}

/**
 * The answers' schemas, as generators in any language need them: named
 * envelopes, open enums, and required fields that match what is sent.
 */
export function documentResponsesForGenerators(document: OpenAPIObject): void {
  nameEnvelopes(document);
  const responseOnly = responseOnlySchemas(document);
  openResponseEnums(document, responseOnly);
  requireAlwaysPresentFields(document, responseOnly);
}
