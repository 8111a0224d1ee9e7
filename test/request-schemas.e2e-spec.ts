import fc from 'fast-check';
import { rulesBeyondSchemaByName } from '../src/common/openapi';
import { createOrg, type TestOrg } from './support/factories';
import { operationsOf, resolver, ResponseValidator, valueOf, type OpenApiDocument, type Operation, type Schema } from './support/openapi-contract';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The served request schemas state every rule the server enforces on a body
 * that JSON Schema can express. For every operation with a body:
 * - values generated from the served schema (and valid against it) are
 *   accepted, or refused only for a rule JSON Schema cannot express, each
 *   listed in docs/decisions.md ("What the served document promises
 *   clients") and declared on its request class (`@RulesBeyondSchema`);
 * - values outside the schema (an unknown field, a required field left out,
 *   an empty string where `minLength` is 1) are refused by the schema and by
 *   the server alike.
 */
const RUNS = Number(process.env.SCHEMA_RUNS ?? 40);

/**
 * The rules a body's schema cannot express, read from the app: each request
 * class declares them with `@RulesBeyondSchema` (src/common/openapi.ts), as
 * the field paths a refusal may name. References must exist in the
 * organization; plan caps and uniqueness depend on stored data; the
 * outbound-URL rule (private addresses, DNS) and the reserved header names
 * are judged by code; a text holding U+0000 is refused everywhere (the API
 * description says so).
 */
function beyondSchema(op: Operation): Readonly<Record<string, string>> | undefined {
  const ref = (op.body as { $ref?: string } | null)?.$ref;
  return ref === undefined ? undefined : rulesBeyondSchemaByName().get(ref.slice('#/components/schemas/'.length));
}

/** A refused field is explained when a declared path is it, or holds it (`tools` holds `tools[0].name`). */
function explains(declared: Readonly<Record<string, string>>, field: string): boolean {
  return Object.keys(declared).some((path) => field === path || field.startsWith(`${path}.`) || field.startsWith(`${path}[`));
}

/** Values for the fields whose rule is code (the outbound-URL rule), so the rest of the body is what is exercised. */
function withCodeRuleValues(operationId: string, body: Record<string, unknown>): Record<string, unknown> {
  if ((operationId === 'createCustomTool' || operationId === 'updateCustomTool') && 'url' in body) return { ...body, url: 'https://api.example.com/v1/items' };
  if (operationId === 'createSource' && body.config && typeof body.config === 'object') return { ...body, config: { ...(body.config as object), url: 'https://docs.example.com/' } };
  return body;
}

let t: TestApp;
let org: TestOrg;
let document: OpenApiDocument;
let resolve: (s: Schema | undefined) => Schema;
let validator: ResponseValidator;
let operations: Operation[];
/** a row of each collection a PATCH writes to, made by the collection's documented POST example */
const targets = new Map<string, string>();

beforeAll(async () => {
  t = await createTestApp();
  // no plan cap: a generated body is judged on its content, not on how many came before it
  org = await createOrg(t.app, { limits: { agents: null, sources: null, custom_tool_slots: null } });
  document = (await t.http.get('/api/v1/openapi.json').expect(200)).body as OpenApiDocument;
  resolve = resolver(document);
  validator = new ResponseValidator(document);
  operations = operationsOf(document).filter((op) => op.body !== null);
  for (const op of operations.filter((candidate) => candidate.path.endsWith('/{id}'))) {
    const collection = op.path.slice(0, -'/{id}'.length);
    const create = (document.paths[collection] as { post?: { requestBody?: { content?: Record<string, { examples?: Record<string, { value?: unknown }> }> } } })?.post;
    const example = Object.values(create?.requestBody?.content?.['application/json']?.examples ?? {})[0]?.value;
    const res = await t.http.post(`/api/v1${collection}`).set('Authorization', org.auth).send(example as object);
    expect({ collection, status: res.status }).toEqual({ collection, status: 201 });
    targets.set(collection, res.body.data.id);
  }
});

afterAll(async () => {
  await t.close();
});

function send(op: Operation, body: unknown) {
  const path = `/api/v1${op.path.replace('{id}', targets.get(op.path.slice(0, -'/{id}'.length)) ?? '')}`;
  const request = op.method === 'POST' ? t.http.post(path) : t.http.patch(path);
  return request.set('Authorization', org.auth).set('Content-Type', 'application/json').send(JSON.stringify(body));
}

/** Valid bodies: generated from the schema without its cross-field rules (an `allOf` entry), kept when the full schema accepts them. */
function validBodies(op: Operation): fc.Arbitrary<Record<string, unknown>> {
  const { allOf: _allOf, ...generatable } = resolve(op.body!);
  return valueOf(generatable, resolve)
    .map((body) => withCodeRuleValues(op.operationId, body as Record<string, unknown>))
    .filter((body) => validator.check(op.body!, body) === null);
}

it('every operation with a body declares the rules its schema cannot express', () => {
  const undeclared = operations
    .filter((op) => beyondSchema(op) === undefined)
    .map((op) => `${op.operationId} takes a body whose class has no @RulesBeyondSchema (src/common/openapi.ts): add one on the request class, the field paths a refusal may name for a rule JSON Schema cannot express (a reference to another row, a rule on stored data) with the rule, or {} for none`);
  expect(undeclared).toEqual([]);
});

/**
 * Runs `check` for every operation with a body of the served document (read
 * in beforeAll, so no hand list names them), and fails naming each that failed.
 */
async function forEveryBodyOperation(check: (op: () => Operation) => Promise<void>): Promise<void> {
  expect(operations.length).toBeGreaterThan(0);
  const failed: string[] = [];
  for (const operation of operations) {
    try {
      await check(() => operation);
    } catch (error) {
      failed.push(`${operation.operationId}: ${(error as Error).message}`);
    }
  }
  expect(failed).toEqual([]);
}

describe('every operation with a body', () => {
  it('values generated from the served schema are accepted, or refused only for a rule the schema cannot express', async () => {
    await forEveryBodyOperation(async (op) => {
      await fc.assert(
        fc.asyncProperty(validBodies(op()), async (body) => {
          const res = await send(op(), body);
          if (res.status < 300) return;
          const fields = Object.keys(res.body.error?.details?.fields ?? {});
          const unexplained = fields.filter((field) => !explains(beyondSchema(op()) ?? {}, field));
          expect({ status: res.status, code: res.body.error?.code, unexplained, body }).toEqual({
            status: res.status === 409 ? 409 : 422,
            code: res.status === 409 ? 'conflict' : 'validation_failed',
            unexplained: [],
            body,
          });
          if (res.status === 422) expect(fields.length + (res.body.error?.details?.limit ? 1 : 0)).toBeGreaterThan(0);
        }),
        { numRuns: RUNS },
      );
    });
  });

  it('values outside the served schema are refused by the schema and by the server', async () => {
    await forEveryBodyOperation(async (op) => {
      const schema = resolve(op().body!);
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const nonEmpty = Object.entries(properties)
        .filter(([, property]) => resolve(property).minLength === 1)
        .map(([name]) => name);
      const required = (schema.required ?? []) as string[];
      expect(schema.additionalProperties).toBe(false);
      await fc.assert(
        fc.asyncProperty(
          validBodies(op()),
          fc.constantFrom<['unknown' | 'empty' | 'missing', number]>(
            ['unknown', 0],
            ...nonEmpty.map((_, i) => ['empty', i] as ['empty', number]),
            ...required.map((_, i) => ['missing', i] as ['missing', number]),
          ),
          async (valid, [kind, index]) => {
            const body = { ...valid };
            let field: string;
            if (kind === 'unknown') {
              field = 'zz_not_a_field';
              body[field] = 1;
            } else if (kind === 'empty') {
              field = nonEmpty[index];
              body[field] = '';
            } else {
              field = required[index];
              delete body[field];
            }
            expect(validator.check(op().body!, body)).not.toBeNull();
            const res = await send(op(), body);
            expect({ status: res.status, named: Object.keys(res.body.error?.details?.fields ?? {}).some((name) => name === field || name.startsWith(`${field}.`)) }).toEqual({
              status: 422,
              named: true,
            });
          },
        ),
        { numRuns: RUNS },
      );
    });
  });
});

it('AgentCreate: instructions, or instructions_html instead, as the schema says (an allOf entry: anyOf)', async () => {
  const op = operations.find((candidate) => candidate.operationId === 'createAgent')!;
  const base = { handle: 'instructionsRule', name: 'N' };
  for (const [body, accepted] of [
    [{ ...base, handle: 'rule1', instructions: 'x' }, true],
    [{ ...base, handle: 'rule2', instructions_html: '<p>x</p>' }, true],
    [{ ...base, handle: 'rule3' }, false],
    [{ ...base, handle: 'rule4', instructions_html: null }, false],
  ] as Array<[Record<string, unknown>, boolean]>) {
    expect({ body, schema: validator.check(op.body!, body) === null }).toEqual({ body, schema: accepted });
    expect({ body, status: (await send(op, body)).status }).toEqual({ body, status: accepted ? 201 : 422 });
  }
});
