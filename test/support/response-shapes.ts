import { MAY_BE_ABSENT, responseOnlySchemas } from '../../src/meta/openapi-responses';
import type { StatusRecord } from './status-recorder';

type Schema = Record<string, unknown>;
type Document = {
  components?: { schemas?: Record<string, Schema> };
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> }>>;
};

const SCHEMA_REF = '#/components/schemas/';

interface Seen {
  answers: number;
  present: Map<string, number>;
}

/** Whether a schema (followed through one $ref) describes an object. */
function isObjectSchema(schema: Schema, components: Record<string, Schema>): boolean {
  const target = typeof schema.$ref === 'string' ? components[schema.$ref.slice(SCHEMA_REF.length)] : schema;
  const type = target?.type;
  return type === 'object' || (Array.isArray(type) && type.includes('object')) || target?.properties !== undefined;
}

/**
 * Walks one answer along its schema: for each component object met, which
 * of its properties this answer carries; a required property it lacks is a
 * problem at once.
 */
function walk(schema: Schema | undefined, value: unknown, components: Record<string, Schema>, seen: Map<string, Seen>, problems: Set<string>, where: string): void {
  if (!schema || value === null || value === undefined) return;
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.slice(SCHEMA_REF.length);
    const target = components[name];
    if (target?.properties && typeof value === 'object' && !Array.isArray(value)) {
      const entry = seen.get(name) ?? seen.set(name, { answers: 0, present: new Map() }).get(name)!;
      entry.answers += 1;
      for (const property of Object.keys(value)) entry.present.set(property, (entry.present.get(property) ?? 0) + 1);
      for (const property of (target.required as string[] | undefined) ?? []) {
        if (!(property in value)) problems.add(`${name}.${property} is required but an answer of ${where} lacks it`);
      }
    }
    return walk(target, value, components, seen, problems, where);
  }
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const branches = schema[key] as Schema[] | undefined;
    if (!branches) continue;
    const wanted = typeof value === 'object' ? branches.filter((branch) => isObjectSchema(branch, components) === !Array.isArray(value) || branch.items) : [];
    for (const branch of wanted.slice(0, 1)) walk(branch, value, components, seen, problems, where);
  }
  if (Array.isArray(value)) {
    for (const item of value) walk(schema.items as Schema | undefined, item, components, seen, problems, where);
    return;
  }
  if (typeof value === 'object') {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [property, child] of Object.entries(value)) walk(properties[property], child, components, seen, problems, where);
  }
}

/**
 * Every 2xx answer the e2e suite got, against its documented schema: a
 * field a response-only schema requires is in every answer, and a field
 * every answer carried is required (so generated clients need not type it
 * `X | undefined`). Schemas that requests use as well keep the request's
 * optional fields and are only checked for the first.
 */
export function responseShapeProblems(
  records: StatusRecord[],
  document: Document,
  operationOf: (record: StatusRecord) => { template: string; method: string } | null,
): string[] {
  const components = document.components?.schemas ?? {};
  const seen = new Map<string, Seen>();
  const problems = new Set<string>();
  for (const record of records) {
    if (record.body === undefined || record.status < 200 || record.status > 299) continue;
    const match = operationOf(record);
    if (!match) continue;
    const schema = document.paths[match.template][match.method].responses?.[String(record.status)]?.content?.['application/json']?.schema;
    walk(schema, record.body, components, seen, problems, `${record.method} ${match.template} (${record.file})`);
  }
  const responseOnly = responseOnlySchemas(document as never);
  for (const [name, entry] of seen) {
    if (!responseOnly.has(name)) continue;
    const required = new Set((components[name].required as string[] | undefined) ?? []);
    // a field declared as sometimes absent may happen to be in every answer the tests made
    const mayBeAbsent = new Set(MAY_BE_ABSENT[name]?.fields ?? []);
    for (const property of Object.keys((components[name].properties ?? {}) as Schema)) {
      if (entry.present.get(property) === entry.answers && !required.has(property) && !mayBeAbsent.has(property)) {
        problems.add(`${name}.${property} is in every one of ${entry.answers} answers but not required`);
      }
    }
  }
  return [...problems].sort();
}
