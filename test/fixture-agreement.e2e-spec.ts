import fc from 'fast-check';
import { ApiValidationPipe } from '../src/common/validation';
import { FixtureRegistry, parseFixtureObject, type FixtureAgreement } from '../src/fixtures/fixture-registry';
import { resolver, valueOf, type OpenApiDocument, type Schema } from './support/openapi-contract';
import { createTestApp } from './support/test-app';

/**
 * A fixture section whose item class derives from a request DTO judges a
 * value as the API does: bodies generated from the served request schema,
 * and the same bodies with one field spoiled (wrong type, null, empty,
 * over-long), are accepted by both or refused by both. The sections are
 * read from the app (each names its request in `agreesWith`), so a new one
 * is tested without an entry here; test/module-registration.e2e-spec.ts
 * fails when a module with a POST body provides a section without it.
 */
const RUNS = Number(process.env.SCHEMA_RUNS ?? 200);

/** Bodies the two judged differently before the item classes derived from the DTOs, and the verdict both give now, by section. */
const SETTLED: Record<string, Array<{ what: string; body: object; accepted: boolean }>> = {
  agents: [{ what: 'an empty model', body: { handle: 'emptyModel', name: 'Empty model', instructions: 'x', model: '' }, accepted: false }],
  custom_tools: [
    {
      what: 'auth with its credentials, as POST takes them',
      body: { label: 'Get ticket', description: 'Reads a ticket', method: 'GET', url: 'https://example.com/t', auth: { type: 'bearer', credentials: { token: 'secret' } } },
      accepted: true,
    },
    { what: 'auth: null', body: { label: 'Get ticket', description: 'Reads a ticket', method: 'GET', url: 'https://example.com/t', auth: null }, accepted: false },
  ],
  sources: [
    { what: 'name: null', body: { type: 'website', name: null, config: { url: 'https://example.com/' } }, accepted: false },
    { what: 'config: null', body: { type: 'website', name: 'Help', config: null }, accepted: false },
  ],
};

let document: OpenApiDocument;
let agreements: Array<{ section: string; schema: string } & FixtureAgreement>;
const pipe = new ApiValidationPipe();

beforeAll(async () => {
  const t = await createTestApp();
  document = (await t.http.get('/api/v1/openapi.json').expect(200)).body as OpenApiDocument;
  agreements = t.app
    .get(FixtureRegistry)
    .ordered()
    .flatMap((section) => (section.agreesWith ? [{ section: section.name, schema: section.agreesWith.request.name, ...section.agreesWith }] : []));
  await t.close();
});

/** Values that break a field's rule, or no rule at all (the verdicts must still agree). */
const SPOILED = fc.oneof(
  fc.constant(null),
  fc.constant(''),
  fc.constant('x'.repeat(100_001)),
  fc.constant(42),
  fc.constant(true),
  fc.constant([]),
  fc.constant({}),
  fc.constant(['x']),
  fc.constant([{ name: '' }]),
  fc.constant('#12'),
  fc.constant('javascript:alert(1)'),
  fc.constant('2026-02-30T00:00:00Z'),
);

async function apiAccepts(dto: new () => object, body: unknown): Promise<boolean> {
  try {
    await pipe.transform(structuredClone(body), { type: 'body', metatype: dto });
    return true;
  } catch {
    return false;
  }
}

function fixtureAccepts(fixture: new () => object, body: unknown): boolean {
  try {
    parseFixtureObject(fixture, structuredClone(body), 'item');
    return true;
  } catch {
    return false;
  }
}

describe('every fixture section that follows a request judges a value as the API does', () => {
  test('the sections are read from the app, and each request is a schema of the served document', () => {
    expect(agreements.map(({ section }) => section)).toEqual(expect.arrayContaining(['agents', 'custom_tools', 'sources']));
    expect(agreements.filter(({ schema }) => !document.components!.schemas![schema]).map(({ schema }) => schema)).toEqual([]);
    // a settled case of a section that no longer names its request would silently stop running
    expect(Object.keys(SETTLED).filter((name) => !agreements.some(({ section }) => section === name))).toEqual([]);
  });

  test('each exception is a field the request body lacks, or one it refuses null for', () => {
    const misnamed = agreements.flatMap(({ schema, fixtureOnly }) => {
      const properties = (document.components!.schemas![schema] as { properties: Record<string, Schema> }).properties;
      return fixtureOnly.filter((name) => name in properties && properties[name].nullable === true).map((name) => `${schema}.${name}`);
    });
    expect(misnamed).toEqual([]);
  });

  test('generated bodies and bodies with one spoiled field: accepted by both or refused by both', async () => {
    const resolve = resolver(document);
    for (const agreement of agreements) {
      const schema = document.components!.schemas![agreement.schema] as Schema;
      const spoilable = Object.keys(schema.properties as object).filter((name) => !agreement.fixtureOnly.includes(name));
      const bodies = fc.tuple(valueOf(schema, resolve), fc.option(fc.tuple(fc.constantFrom(...spoilable), SPOILED), { nil: undefined }));
      await fc.assert(
        fc.asyncProperty(bodies, async ([generated, spoil]) => {
          const body = { ...(generated as Record<string, unknown>) };
          if (spoil) body[spoil[0]] = spoil[1];
          const verdicts = { api: await apiAccepts(agreement.request, body), fixture: fixtureAccepts(agreement.item, body) };
          expect({ section: agreement.section, body, verdicts }).toEqual({ section: agreement.section, body, verdicts: { api: verdicts.fixture, fixture: verdicts.fixture } });
        }),
        { numRuns: RUNS },
      );
    }
  });

  test('former disagreements are settled', async () => {
    for (const { section, request, item } of agreements) {
      for (const { what, body, accepted } of SETTLED[section] ?? []) {
        expect({ section, what, api: await apiAccepts(request, body), fixture: fixtureAccepts(item, body) }).toEqual({ section, what, api: accepted, fixture: accepted });
      }
    }
  });
});
