import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { BOUNDS } from '../src/common/input-bounds';
import { createOrg, type TestOrg } from './support/factories';
import { insertAgent } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * docs/decisions.md "Input bounds": every request input has an upper bound;
 * one over it answers 422 validation_failed naming the field, at the bound the
 * request is accepted, and the served OpenAPI document states the same number.
 * The reason for each number is the comment above its constant in
 * src/common/input-bounds.ts (the shared bounds) or in a module's own
 * `*.bounds.ts`; a constant without one fails here.
 */

let t: TestApp;
let counter = 0;
const unique = (base: string) => `${base}${Date.now().toString(36)}${++counter}`;

beforeAll(async () => {
  t = await createTestApp();
});

afterAll(async () => {
  await t.close();
});

type Res = { status: number; body: { error?: { code: string; details?: { fields?: Record<string, string[]> } } } };

function expectRejected(res: Res, field: string): void {
  expect(res.status).toBe(422);
  expect(res.body.error?.code).toBe('validation_failed');
  expect(Object.keys(res.body.error?.details?.fields ?? {})).toContain(field);
}

const x = (length: number) => 'x'.repeat(length);

describe('Agents: POST and PATCH /agents enforce the input bounds', () => {
  const post = (org: TestOrg, body: Record<string, unknown>) =>
    t.http
      .post('/api/v1/agents')
      .set('Authorization', org.auth)
      .send({ handle: unique('bounds'), name: 'Bounds', instructions: 'Help.', ...body });

  it.each([
    ['name', { name: x(BOUNDS.name) }, { name: x(BOUNDS.name + 1) }],
    ['description', { description: x(BOUNDS.agentDescription) }, { description: x(BOUNDS.agentDescription + 1) }],
    ['instructions', { instructions: x(BOUNDS.instructions) }, { instructions: x(BOUNDS.instructions + 1) }],
    ['instructions_html', { instructions_html: x(BOUNDS.instructions) }, { instructions_html: x(BOUNDS.instructions + 1) }],
    ['avatar', { avatar: x(BOUNDS.url) }, { avatar: x(BOUNDS.url + 1) }],
  ])('string %s: at the bound 201, one over 422 naming it', async (field, atLimit, overLimit) => {
    const org = await createOrg(t.app);
    expect((await post(org, atLimit)).status).toBe(201);
    expectRejected(await post(org, overLimit), field);
  });

  it(`handle: ${BOUNDS.handle} characters 201, ${BOUNDS.handle + 1} 422 naming handle`, async () => {
    const org = await createOrg(t.app);
    const base = unique('h');
    expect((await post(org, { handle: base + 'a'.repeat(BOUNDS.handle - base.length) })).status).toBe(201);
    expectRejected(await post(org, { handle: base + 'a'.repeat(BOUNDS.handle + 1 - base.length) }), 'handle');
  });

  it(`array tools: ${BOUNDS.agentTools} entries 201, ${BOUNDS.agentTools + 1} 422 naming tools`, async () => {
    const org = await createOrg(t.app);
    const tools = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `builtin_tool_${i}` }));
    const ok = await post(org, { tools: tools(BOUNDS.agentTools) });
    expect(ok.status).toBe(201);
    expect(ok.body.data.tools_count).toBe(BOUNDS.agentTools);
    expectRejected(await post(org, { tools: tools(BOUNDS.agentTools + 1) }), 'tools');
  });

  it(`array data_sources[].documents: more than ${BOUNDS.documentsPerSource} ids → 422 naming data_sources[0].documents`, async () => {
    const org = await createOrg(t.app);
    const documents = Array.from({ length: BOUNDS.documentsPerSource + 1 }, (_, i) => `doc_${i.toString(16).padStart(24, '0')}`);
    const res = await post(org, { data_sources: [{ source_id: 'source_0123456789abcdef01234567', scope: 'selected', documents }] });
    expectRejected(res, 'data_sources[0].documents');
  });

  it.each([['connectors'], ['sub_agents']])('id list %s: an item longer than the id bound → 422 naming the list', async (field) => {
    const org = await createOrg(t.app);
    expectRejected(await post(org, { [field]: [x(BOUNDS.id + 1)] }), field);
  });

  it('tools[].connector_id longer than the id bound → 422 naming it', async () => {
    const org = await createOrg(t.app);
    expectRejected(await post(org, { tools: [{ name: 'zendesk_get_ticket', connector_id: x(BOUNDS.id + 1) }] }), 'tools[0].connector_id');
  });

  it(`pending_trigger_hint: at most ${BOUNDS.jsonBytes} bytes as JSON and ${BOUNDS.jsonDepth} levels`, async () => {
    const org = await createOrg(t.app);
    const atLimit = { note: x(BOUNDS.jsonBytes - JSON.stringify({ note: '' }).length) };
    expect(Buffer.byteLength(JSON.stringify(atLimit))).toBe(BOUNDS.jsonBytes);
    expect((await post(org, { pending_trigger_hint: atLimit })).status).toBe(201);
    expectRejected(await post(org, { pending_trigger_hint: { note: atLimit.note + 'x' } }), 'pending_trigger_hint');

    let nested: Record<string, unknown> = { leaf: 1 };
    for (let depth = 1; depth < BOUNDS.jsonDepth; depth++) nested = { inner: nested };
    expect((await post(org, { pending_trigger_hint: nested })).status).toBe(201);
    expectRejected(await post(org, { pending_trigger_hint: { inner: nested } }), 'pending_trigger_hint');
  });

  it('PATCH: deactivated_reason and deactivated_at are bounded', async () => {
    const org = await createOrg(t.app);
    const created = await post(org, {});
    expect(created.status).toBe(201);
    const patch = (body: Record<string, unknown>) => t.http.patch(`/api/v1/agents/${created.body.data.id}`).set('Authorization', org.auth).send(body);
    expect((await patch({ deactivated_reason: x(BOUNDS.deactivatedReason) })).status).toBe(200);
    expectRejected(await patch({ deactivated_reason: x(BOUNDS.deactivatedReason + 1) }), 'deactivated_reason');
    expectRejected(await patch({ deactivated_at: '2026-01-31T12:00:00' + '0'.repeat(BOUNDS.dateTime) + 'Z' }), 'deactivated_at');
    expectRejected(await patch({ name: x(BOUNDS.name + 1) }), 'name');
  });
});

describe('Custom tools: POST and PATCH /custom_tools enforce the input bounds', () => {
  const body = (overrides: Record<string, unknown> = {}) => ({
    label: unique('Bounds Tool '),
    description: 'Fetches one ticket.',
    method: 'GET',
    url: 'https://acme.example.com/api/tickets',
    ...overrides,
  });
  const post = (org: TestOrg, overrides: Record<string, unknown>) => t.http.post('/api/v1/custom_tools').set('Authorization', org.auth).send(body(overrides));

  it.each([
    ['label', { label: x(BOUNDS.name) }, { label: x(BOUNDS.name + 1) }],
    ['description', { description: x(BOUNDS.toolDescription) }, { description: x(BOUNDS.toolDescription + 1) }],
    ['url', { url: `https://acme.example.com/${x(BOUNDS.url - 'https://acme.example.com/'.length)}` }, { url: `https://acme.example.com/${x(BOUNDS.url + 1 - 'https://acme.example.com/'.length)}` }],
    ['response_mapping', { response_mapping: x(BOUNDS.responseMapping) }, { response_mapping: x(BOUNDS.responseMapping + 1) }],
    [
      'auth.credentials.token',
      { auth: { type: 'bearer', credentials: { token: x(BOUNDS.headerValue) } } },
      { auth: { type: 'bearer', credentials: { token: x(BOUNDS.headerValue + 1) } } },
    ],
    ['group.name', { group: { name: x(BOUNDS.groupName) } }, { group: { name: x(BOUNDS.groupName + 1) } }],
  ])('string %s: at the bound 201, one over 422 naming it', async (field, atLimit, overLimit) => {
    const org = await createOrg(t.app);
    expect((await post(org, atLimit)).status).toBe(201);
    expectRejected(await post(org, overLimit), field);
  });

  it(`array parameters: ${BOUNDS.toolParameters} entries 201, ${BOUNDS.toolParameters + 1} 422 naming parameters`, async () => {
    const org = await createOrg(t.app);
    const parameters = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `p${i}`, in: 'query' }));
    expect((await post(org, { parameters: parameters(BOUNDS.toolParameters) })).status).toBe(201);
    expectRejected(await post(org, { parameters: parameters(BOUNDS.toolParameters + 1) }), 'parameters');
  });

  it(`headers: ${BOUNDS.headers} entries with ${BOUNDS.headerValue}-character values 201; one more entry or one more character 422`, async () => {
    const org = await createOrg(t.app);
    const headers = (n: number, valueLength = 8) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-Custom-${i}`, x(valueLength)]));
    expect((await post(org, { headers: headers(BOUNDS.headers) })).status).toBe(201);
    expect((await post(org, { headers: { 'X-Long': x(BOUNDS.headerValue) } })).status).toBe(201);
    expectRejected(await post(org, { headers: headers(BOUNDS.headers + 1) }), 'headers');
    expectRejected(await post(org, { headers: { 'X-Long': x(BOUNDS.headerValue + 1) } }), 'headers.X-Long');
  });

  it('PATCH rejects an over-long description naming it, and accepts one at the bound', async () => {
    const org = await createOrg(t.app);
    const created = await post(org, {});
    expect(created.status).toBe(201);
    const patch = (b: Record<string, unknown>) => t.http.patch(`/api/v1/custom_tools/${created.body.data.id}`).set('Authorization', org.auth).send(b);
    expect((await patch({ description: x(BOUNDS.toolDescription) })).status).toBe(200);
    expectRejected(await patch({ description: x(BOUNDS.toolDescription + 1) }), 'description');
  });
});

describe('Sources: POST /sources enforces the input bounds', () => {
  const post = (org: TestOrg, b: Record<string, unknown>) => t.http.post('/api/v1/sources').set('Authorization', org.auth).send(b);
  const prefix = 'https://help.example.com/';

  it('name and config.url: at the bound 201, one over 422 naming the field', async () => {
    const org = await createOrg(t.app);
    const url = (length: number) => prefix + x(length - prefix.length);
    expect((await post(org, { type: 'webpage', name: x(BOUNDS.name), config: { url: url(BOUNDS.url) } })).status).toBe(201);
    expectRejected(await post(org, { type: 'webpage', name: x(BOUNDS.name + 1), config: { url: prefix } }), 'name');
    expectRejected(await post(org, { type: 'webpage', name: 'Help', config: { url: url(BOUNDS.url + 1) } }), 'config.url');
  });
});

describe('Conversations: GET /conversations query parameters are bounded', () => {
  const list = (org: TestOrg, query: string) => t.http.get(`/api/v1/conversations?${query}`).set('Authorization', org.auth);

  it.each([
    ['conversation_number', `conversation_number=${BOUNDS.conversationNumber}`, `conversation_number=${BOUNDS.conversationNumber + 1}`],
    ['q', `q=${x(BOUNDS.filterText)}`, `q=${x(BOUNDS.filterText + 1)}`],
    ['ticket_id', `ticket_id=${x(BOUNDS.filterText)}`, `ticket_id=${x(BOUNDS.filterText + 1)}`],
    ['model', `model=${x(BOUNDS.filterText)}`, `model=${x(BOUNDS.filterText + 1)}`],
    ['metadata[ticketId]', `metadata[ticketId]=${x(BOUNDS.metadataValue)}`, `metadata[ticketId]=${x(BOUNDS.metadataValue + 1)}`],
    [`metadata[${'k'.repeat(BOUNDS.metadataKey + 1)}]`, `metadata[${'k'.repeat(BOUNDS.metadataKey)}]=1`, `metadata[${'k'.repeat(BOUNDS.metadataKey + 1)}]=1`],
    ['since', 'since=2026-01-31T12:00:00.123456789%2B01:00', `since=${x(BOUNDS.dateTime + 1)}`],
    ['agent_id', 'agent_id=0123456789abcdef01234567', `agent_id=${x(BOUNDS.id + 1)}`],
  ])('%s: at the bound 200, one over 422 naming it', async (field, atLimit, overLimit) => {
    const org = await createOrg(t.app);
    expect((await list(org, atLimit)).status).toBe(200);
    expectRejected(await list(org, overLimit), field);
  });

  it(`more than ${BOUNDS.metadataKeys} metadata keys → 422 naming metadata`, async () => {
    const org = await createOrg(t.app);
    const keys = (n: number) => Array.from({ length: n }, (_, i) => `metadata[k${i}]=v`).join('&');
    expect((await list(org, keys(BOUNDS.metadataKeys))).status).toBe(200);
    expectRejected(await list(org, keys(BOUNDS.metadataKeys + 1)), 'metadata');
  });

  it('conversation_number 0 and non-integers stay rejected', async () => {
    const org = await createOrg(t.app);
    expectRejected(await list(org, 'conversation_number=0'), 'conversation_number');
    expectRejected(await list(org, 'conversation_number=99999999999999'), 'conversation_number');
  });
});

describe('Analytics: GET /analytics/agents/{agent_id} query parameters are bounded', () => {
  it('since/until: a valid date-time 200; longer than the date-time bound 422 naming it', async () => {
    const org = await createOrg(t.app);
    const agentId = await insertAgent(t.connection.db, org.orgId);
    const get = (query: string) => t.http.get(`/api/v1/analytics/agents/${agentId}?${query}`).set('Authorization', org.auth);
    expect((await get('since=2026-01-01T00:00:00.123456789Z&until=2026-01-31T00:00:00Z')).status).toBe(200);
    expectRejected(await get(`until=${x(BOUNDS.dateTime + 1)}`), 'until');
    expectRejected(await get(`since=2026-01-01T00:00:00Z${'0'.repeat(BOUNDS.dateTime)}`), 'since');
  });
});

describe('OpenAPI: the served document states the same bounds the validator enforces', () => {
  type Schema = Record<string, unknown> & { properties?: Record<string, Schema>; items?: Schema; additionalProperties?: Schema };
  let doc: { components: { schemas: Record<string, Schema> }; paths: Record<string, Record<string, { parameters?: Array<{ name: string; schema: Schema }> }>> };
  beforeAll(async () => {
    doc = (await t.http.get('/api/v1/openapi.json')).body;
  });
  const prop = (schema: string, name: string) => doc.components.schemas[schema].properties![name];
  const param = (path: string, name: string) => doc.paths[path].get.parameters!.find((p) => p.name === name)!.schema;

  it('request bodies', () => {
    expect(prop('AgentCreateDto', 'name').maxLength).toBe(BOUNDS.name);
    expect(prop('AgentCreateDto', 'handle').maxLength).toBe(BOUNDS.handle);
    expect(prop('AgentCreateDto', 'description').maxLength).toBe(BOUNDS.agentDescription);
    expect(prop('AgentCreateDto', 'instructions').maxLength).toBe(BOUNDS.instructions);
    expect(prop('AgentCreateDto', 'tools').maxItems).toBe(BOUNDS.agentTools);
    expect(prop('AgentCreateDto', 'connectors').items).toMatchObject({ maxLength: BOUNDS.id, pattern: '^(connector_[a-f0-9]{24}|[a-f0-9]{24})$' });
    expect(prop('AgentUpdateDto', 'deactivated_at').maxLength).toBe(BOUNDS.dateTime);
    expect(prop('DataSourceRefInputDto', 'documents').maxItems).toBe(BOUNDS.documentsPerSource);
    expect(prop('CustomToolCreateDto', 'parameters').maxItems).toBe(BOUNDS.toolParameters);
    expect(prop('CustomToolCreateDto', 'headers')).toMatchObject({ maxProperties: BOUNDS.headers, additionalProperties: { maxLength: BOUNDS.headerValue } });
    expect(prop('CustomToolCreateDto', 'url').maxLength).toBe(BOUNDS.url);
    expect(prop('CustomToolCredentialsInputDto', 'token').maxLength).toBe(BOUNDS.headerValue);
    expect(prop('SourceCreateDto', 'config').properties!.url.maxLength).toBe(BOUNDS.url);
  });

  it('query parameters', () => {
    expect(param('/conversations', 'conversation_number')).toMatchObject({ type: 'integer', format: 'int32', minimum: 1, maximum: BOUNDS.conversationNumber });
    expect(param('/conversations', 'q').maxLength).toBe(BOUNDS.filterText);
    expect(param('/conversations', 'since').maxLength).toBe(BOUNDS.dateTime);
    // metadata[KEY] is no parameter of the document (generators without deepObject would send it wrong): its extension states the bounds
    const deepObjects = (doc.paths['/conversations'].get as unknown as { 'x-query-deep-objects': Array<{ name: string; schema: unknown }> })['x-query-deep-objects'];
    expect(deepObjects.find((entry) => entry.name === 'metadata')!.schema).toMatchObject({ maxProperties: BOUNDS.metadataKeys, additionalProperties: { maxLength: BOUNDS.metadataValue } });
    expect(param('/analytics/agents/{agent_id}', 'until').maxLength).toBe(BOUNDS.dateTime);
  });
});

describe('BOUNDS is the table of bounds: every constant says what it bounds and why', () => {
  const DECISIONS = resolve(__dirname, '../docs/decisions.md');
  const BEGIN = '<!-- the BOUNDS table: written by test/input-bounds.e2e-spec.ts from src/common/input-bounds.ts -->';
  const END = '<!-- end of the BOUNDS table -->';

  interface Bound {
    /** as the table shows it: `name` for BOUNDS, `CHATBOT_BOUNDS.publicId` for a module's own */
    constant: string;
    value: number;
    /** the comment above it ('' when it has none) */
    reason: string;
    file: string;
  }

  /** src/common/input-bounds.ts, then every module's own `src/<resource>/<resource>.bounds.ts`: found by name, not listed. */
  function boundFiles(): string[] {
    const src = resolve(__dirname, '../src');
    const own = readdirSync(src, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => readdirSync(join(src, entry.name)).filter((name) => name.endsWith('.bounds.ts')).map((name) => join(src, entry.name, name)))
      .sort();
    return [join(src, 'common/input-bounds.ts'), ...own];
  }

  /** Each bound of each file: its exported `as const` objects (only BOUNDS in input-bounds.ts), each constant with its comment and value. */
  function bounds(): Bound[] {
    return boundFiles().flatMap((file) => {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const shared = file.endsWith('input-bounds.ts');
      const values = require(file) as Record<string, Record<string, number>>;
      const objects: Array<[string, ts.ObjectLiteralExpression]> = [];
      source.forEachChild(function visit(node) {
        if (ts.isVariableDeclaration(node) && node.initializer && ts.isAsExpression(node.initializer) && ts.isObjectLiteralExpression(node.initializer.expression)) {
          if (!shared || node.name.getText() === 'BOUNDS') objects.push([node.name.getText(), node.initializer.expression]);
        }
        node.forEachChild(visit);
      });
      expect({ file, objects: objects.length > 0 }).toEqual({ file, objects: true });
      return objects.flatMap(([object, literal]) =>
        literal.properties.map((property) => {
          const name = property.name!.getText();
          const reason = ts
            .getJSDocCommentsAndTags(property)
            .map((doc) => ts.getTextOfJSDocComment(doc.comment)?.trim() ?? '')
            .join(' ');
          return { constant: shared ? name : `${object}.${name}`, value: values[object][name], reason: reason.replace(/\s+/g, ' ').trim(), file: file.slice(resolve(__dirname, '..').length + 1) };
        }),
      );
    });
  }

  it("BOUNDS is read, with the modules' own bounds", () => {
    // a reshaped file would otherwise pass unchecked; a module's bounds are found by their file name
    const found = bounds();
    expect(found.filter((bound) => bound.file === 'src/common/input-bounds.ts').map((bound) => bound.constant)).toEqual(Object.keys(BOUNDS));
    expect(found.map((bound) => bound.constant)).toContain('CHATBOT_BOUNDS.publicId');
  });

  it('each bound has a comment of its own, and a number', () => {
    const missing = bounds()
      .filter((bound) => !bound.reason || typeof bound.value !== 'number')
      .map((bound) => `${bound.constant} (${bound.file}) has no comment or no number: write above it, as /** … */, which inputs it bounds and why this number`);
    expect(missing).toEqual([]);
  });

  it('docs/decisions.md lists every bound with its number and reason, as BOUNDS has them', () => {
    const rows = bounds().map((bound) => `| \`${bound.constant}\` | ${bound.value.toLocaleString('en-US')} | ${bound.reason.replace(/\|/g, '\\|')} |`);
    const table = [BEGIN, '', '| constant | bound | what it bounds, and why this number |', '|---|---|---|', ...rows, '', END].join('\n');
    const text = readFileSync(DECISIONS, 'utf8');
    const [start, end] = [text.indexOf(BEGIN), text.indexOf(END)];
    expect({ markersFound: start >= 0 && end > start }).toEqual({ markersFound: true });
    const stored = text.slice(start, end + END.length);
    // rewritten on request, then judged as rewritten: one run, green, and a docs/decisions.md to commit
    const rewrite = process.env.UPDATE_GENERATED === '1' && stored !== table;
    if (rewrite) writeFileSync(DECISIONS, text.slice(0, start) + table + text.slice(end + END.length));
    const verdict =
      stored === table || rewrite
        ? 'up to date'
        : 'the bounds table of docs/decisions.md differs from src/common/input-bounds.ts and the modules\' *.bounds.ts: run `UPDATE_GENERATED=1 npm test -- test/input-bounds.e2e-spec.ts` and commit docs/decisions.md';
    expect(verdict).toBe('up to date');
  });
});
