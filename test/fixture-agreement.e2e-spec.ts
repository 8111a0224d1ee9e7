import fc from 'fast-check';
import { ApiValidationPipe } from '../src/common/validation';
import { AgentCreateDto } from '../src/agents/agents.dto';
import { AGENT_FIXTURE_ONLY, AgentFixture } from '../src/agents/agents.fixtures';
import { CUSTOM_TOOL_FIXTURE_ONLY, CustomToolFixture } from '../src/custom-tools/custom-tools.fixtures';
import { CustomToolCreateDto } from '../src/custom-tools/custom-tools.dto';
import { SOURCE_FIXTURE_ONLY, SourceFixture } from '../src/sources/sources.fixtures';
import { SourceCreateDto } from '../src/sources/sources.dto';
import { parseFixtureObject } from '../src/fixtures/fixture-registry';
import { resolver, valueOf, type OpenApiDocument, type Schema } from './support/openapi-contract';
import { createTestApp } from './support/test-app';

/**
 * A fixture section whose item class derives from a request DTO judges a
 * value as the API does: bodies generated from the served request schema,
 * and the same bodies with one field spoiled (wrong type, null, empty,
 * over-long), are accepted by both or refused by both. Fields a fixture
 * takes and the request does not (or takes with null) are named by the
 * section and never spoiled.
 */
const RUNS = Number(process.env.SCHEMA_RUNS ?? 200);

interface Agreement {
  /** the request body's schema name in the served document */
  schema: string;
  dto: new () => object;
  fixture: new () => object;
  fixtureOnly: readonly string[];
  /** bodies the two judged differently before the fixture class derived from the DTOs, and the verdict both give now */
  settled: { what: string; body: object; accepted: boolean }[];
}

const AGREEMENTS: Agreement[] = [
  {
    schema: 'AgentCreateDto',
    dto: AgentCreateDto,
    fixture: AgentFixture,
    fixtureOnly: AGENT_FIXTURE_ONLY,
    settled: [{ what: 'an empty model', body: { handle: 'emptyModel', name: 'Empty model', instructions: 'x', model: '' }, accepted: false }],
  },
  {
    schema: 'CustomToolCreateDto',
    dto: CustomToolCreateDto,
    fixture: CustomToolFixture,
    fixtureOnly: CUSTOM_TOOL_FIXTURE_ONLY,
    settled: [
      {
        what: 'auth with its credentials, as POST takes them',
        body: { label: 'Get ticket', description: 'Reads a ticket', method: 'GET', url: 'https://example.com/t', auth: { type: 'bearer', credentials: { token: 'secret' } } },
        accepted: true,
      },
      { what: 'auth: null', body: { label: 'Get ticket', description: 'Reads a ticket', method: 'GET', url: 'https://example.com/t', auth: null }, accepted: false },
    ],
  },
  {
    schema: 'SourceCreateDto',
    dto: SourceCreateDto,
    fixture: SourceFixture,
    fixtureOnly: SOURCE_FIXTURE_ONLY,
    settled: [
      { what: 'name: null', body: { type: 'website', name: null, config: { url: 'https://example.com/' } }, accepted: false },
      { what: 'config: null', body: { type: 'website', name: 'Help', config: null }, accepted: false },
    ],
  },
];

let document: OpenApiDocument;
const pipe = new ApiValidationPipe();

beforeAll(async () => {
  const t = await createTestApp();
  document = (await t.http.get('/api/v1/openapi.json').expect(200)).body as OpenApiDocument;
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

describe.each(AGREEMENTS)('the $schema fixture judges a value as the API does', (agreement) => {
  test('each exception is a field the request body lacks, or one it refuses null for', () => {
    const properties = (document.components!.schemas![agreement.schema] as { properties: Record<string, Schema> }).properties;
    const misnamed = agreement.fixtureOnly.filter((name) => name in properties && properties[name].nullable === true);
    expect(misnamed).toEqual([]);
  });

  test('generated bodies and bodies with one spoiled field: accepted by both or refused by both', async () => {
    const resolve = resolver(document);
    const schema = document.components!.schemas![agreement.schema] as Schema;
    const spoilable = Object.keys(schema.properties as object).filter((name) => !agreement.fixtureOnly.includes(name));
    const bodies = fc.tuple(valueOf(schema, resolve), fc.option(fc.tuple(fc.constantFrom(...spoilable), SPOILED), { nil: undefined }));
    await fc.assert(
      fc.asyncProperty(bodies, async ([generated, spoil]) => {
        const body = { ...(generated as Record<string, unknown>) };
        if (spoil) body[spoil[0]] = spoil[1];
        const verdicts = { api: await apiAccepts(agreement.dto, body), fixture: fixtureAccepts(agreement.fixture, body) };
        expect({ body, verdicts }).toEqual({ body, verdicts: { api: verdicts.fixture, fixture: verdicts.fixture } });
      }),
      { numRuns: RUNS },
    );
  });

  test.each(agreement.settled)('a former disagreement is settled: $what (accepted: $accepted)', async ({ body, accepted }) => {
    expect({ api: await apiAccepts(agreement.dto, body), fixture: fixtureAccepts(agreement.fixture, body) }).toEqual({ api: accepted, fixture: accepted });
  });
});
