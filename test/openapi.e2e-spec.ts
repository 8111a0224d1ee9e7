import { spawnSync } from 'node:child_process';
import { servedRoutes } from '../src/http-app';
import { partialUpdateBodySchemas } from '../src/common/openapi';
import { ResponseValidator, type OpenApiDocument } from './support/openapi-contract';
import { createTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let document: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

beforeAll(async () => {
  t = await createTestApp();
  const res = await t.http.get('/api/v1/openapi.json');
  expect(res.status).toBe(200);
  document = res.body;
});
afterAll(() => t.close());

const PUBLIC_OPERATIONS = ['GET /', 'GET /openapi.json'];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function operations(): Array<{ key: string; path: string; method: string; operation: Record<string, any> }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, path, method, operation: operation as Record<string, any> })), // eslint-disable-line @typescript-eslint/no-explicit-any
  );
}

/**
 * The routes the HTTP platform actually serves (as bootstrap registered them),
 * relative to the /api/v1 prefix, in OpenAPI form. HEAD is served for every
 * GET and is not an operation of its own; the interactive reference's pages
 * under /docs are not API routes.
 */
function registeredRoutes(): string[] {
  const routes = new Set<string>();
  for (const { method, path } of servedRoutes(t.app)) {
    if (method === 'HEAD' || !/^\/api\/v1(\/|$)/.test(path)) continue;
    const relative = path.replace(/^\/api\/v1/, '').replace(/\/$/, '') || '/';
    routes.add(`${method} ${relative.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  }
  return [...routes].sort();
}

describe('GET /openapi.json is a valid OpenAPI 3.1.0 document', () => {
  test('a real OpenAPI 3.1 validator accepts it', () => {
    // the validator is ESM-only: run it in plain Node, hand the document over stdin
    const script = `
      import { Validator } from '@seriousme/openapi-schema-validator';
      let text = '';
      process.stdin.on('data', (c) => (text += c)).on('end', async () => {
        const validator = new Validator({ strict: true });
        const result = await validator.validate(JSON.parse(text));
        process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors ?? null }));
      });`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { input: JSON.stringify(document), encoding: 'utf8', cwd: process.cwd() });
    expect(run.stderr).toBe('');
    const result = JSON.parse(run.stdout) as { valid: boolean; version: string; errors: unknown };
    expect(result.errors).toBeNull();
    expect(result).toMatchObject({ valid: true, version: '3.1' });
  });

  test('the validator is not a rubber stamp: it rejects a broken copy', () => {
    const broken = { ...document, paths: { '/x': { get: { responses: { 200: { description: 1 } } } } } };
    const script = `
      import { Validator } from '@seriousme/openapi-schema-validator';
      let text = '';
      process.stdin.on('data', (c) => (text += c)).on('end', async () => {
        const result = await new Validator().validate(JSON.parse(text));
        process.stdout.write(JSON.stringify({ valid: result.valid }));
      });`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { input: JSON.stringify(broken), encoding: 'utf8' });
    expect(JSON.parse(run.stdout)).toEqual({ valid: false });
  });

  test('openapi 3.1.0, info.version 1.0.0, server /api/v1, bearer scheme', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0.0');
    // x-internal: false marks the server public for the OWASP inventory rule (npm run lint:api)
    expect(document.servers).toEqual([{ url: '/api/v1', 'x-internal': false }]);
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  test('no 3.0 `nullable` keyword anywhere; nullable fields use 3.1 type arrays or oneOf with null', () => {
    const found: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${path}[${i}]`));
      if (node === null || typeof node !== 'object') return;
      for (const [key, value] of Object.entries(node)) {
        if (key === 'nullable') found.push(path);
        walk(value, `${path}.${key}`);
      }
    };
    walk(document, '$');
    expect(found).toEqual([]);
    expect(JSON.stringify(document)).toContain('"null"');
  });
});

describe('the document lists exactly the shipped endpoints', () => {
  test('every registered route is documented, and nothing else is', () => {
    const documented = operations()
      .map((op) => op.key)
      .sort();
    expect(documented).toEqual(registeredRoutes());
    expect(documented).toEqual(expect.arrayContaining(['GET /', 'GET /openapi.json', 'GET /org', 'GET /team']));
  });

  test('every operation names its scope (security + x-required-scope), or is one of the two public ones with security []', () => {
    for (const { key, operation } of operations()) {
      if (PUBLIC_OPERATIONS.includes(key)) {
        expect({ key, security: operation.security }).toEqual({ key, security: [] });
        expect(operation['x-required-scope']).toBeUndefined();
        // the meta endpoints have no errors (no key, no rate limit) and read no body; only what is
        // refused before routing: a request that is not valid HTTP, headers over 16 KiB or too slow,
        // an unknown Expect
        expect({ key, clientErrors: Object.keys(operation.responses).filter((status) => status.startsWith('4')).sort() }).toEqual({
          key,
          clientErrors: ['400', '408', '417', '431'],
        });
        continue;
      }
      const scope = operation['x-required-scope'];
      expect({ key, scope }).toEqual({ key, scope: expect.stringMatching(/^[a-z_]+:(read|write|delete)$/) });
      expect({ key, security: operation.security }).toEqual({ key, security: [{ bearer: [scope] }] });
      for (const status of ['400', '401', '403', '408', '413', '417', '422', '429', '431', '500']) expect({ key, status, documented: status in operation.responses }).toEqual({ key, status, documented: true });
    }
  });

  test('operation ids are unique', () => {
    const ids = operations().map((op) => op.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('success responses are documented in the envelope; errors in the error envelope', () => {
    for (const { key, operation } of operations()) {
      if (key === 'GET /openapi.json') continue;
      const success = Object.entries(operation.responses).find(([status]) => status.startsWith('2'));
      const ref = (success![1] as { content: { 'application/json': { schema: { $ref: string } } } }).content['application/json'].schema.$ref;
      // every envelope is a named component (no generator-invented names)
      const schema = document.components.schemas[ref.split('/').pop()!] as Record<string, unknown>;
      expect({ key, required: schema.required }).toEqual({ key, required: ['data', 'meta'] });
      for (const [status, response] of Object.entries(operation.responses)) {
        // a 304 has no body at all
        if (status.startsWith('2') || status === '304') continue;
        expect({ key, status, ref: (response as { content: { 'application/json': { schema: { $ref: string } } } }).content['application/json'].schema.$ref }).toEqual({
          key,
          status,
          ref: '#/components/schemas/ErrorEnvelope',
        });
      }
    }
  });
});

describe('Org and Member schemas follow the contract exactly', () => {
  const schema = (name: string) => document.components.schemas[name];

  test('Org: fields, required, nullability', () => {
    const org = schema('OrgDto');
    expect(Object.keys(org.properties).sort()).toEqual(['created_at', 'credits', 'id', 'limits', 'name', 'plan', 'slug', 'status', 'trial'].sort());
    // the contract's required fields, plus the nullable ones the service always sends
    expect([...org.required].sort()).toEqual(['created_at', 'credits', 'id', 'limits', 'name', 'plan', 'slug', 'status', 'trial']);
    expect(org.properties.created_at.type).toEqual(['string', 'null']);
    expect(JSON.stringify(org.properties.trial)).toContain('"null"');
    const credits = schema('OrgCreditsDto');
    expect([...credits.required].sort()).toEqual(['remaining', 'reset_at', 'top_up', 'total', 'used']);
    expect(credits.properties.reset_at.type).toEqual(['string', 'null']);
    const limits = schema('OrgLimitsDto');
    expect(Object.keys(limits.properties).sort()).toEqual(['agents', 'chatbots', 'connectors', 'custom_tool_slots', 'scheduled_triggers', 'sources']);
    for (const value of Object.values(limits.properties) as Array<{ type: unknown }>) expect(value.type).toEqual(['integer', 'null']);
  });

  test('Member: fields, required, nullability', () => {
    const member = schema('MemberDto');
    expect(Object.keys(member.properties).sort()).toEqual(['created_at', 'email', 'id', 'is_active', 'last_login_at', 'name', 'role', 'user_id']);
    // the contract's required fields, plus the nullable ones the service always sends
    expect([...member.required].sort()).toEqual(['created_at', 'email', 'id', 'is_active', 'last_login_at', 'name', 'role', 'user_id']);
    for (const field of ['name', 'last_login_at', 'created_at']) expect(member.properties[field].type).toEqual(['string', 'null']);
    expect(member.properties.email.format).toBe('email');
    // an open string type: the known values, or any other string
    expect(member.properties.role).toMatchObject({ anyOf: [{ $ref: '#/components/schemas/MemberRole' }, { type: 'string' }] });
    expect(document.components.schemas.MemberRole.enum).toEqual(['owner', 'admin', 'member']);
  });
});

describe('what generated clients see', () => {
  /** Component schemas a request body uses, directly or nested. */
  function requestSchemas(): Set<string> {
    const found = new Set<string>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (node === null || typeof node !== 'object') return;
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string') {
          const name = value.split('/').pop()!;
          if (!found.has(name)) {
            found.add(name);
            walk(document.components.schemas[name]);
          }
        } else if (key !== 'example' && key !== 'examples') walk(value);
      }
    };
    for (const { operation } of operations()) walk(operation.requestBody);
    return found;
  }

  /** Component schema name of each PATCH operation's body: "PATCH /agents/{id}" → "AgentUpdateDto". */
  function patchBodies(): Map<string, string> {
    const bodies = new Map<string, string>();
    for (const { key, method, operation } of operations()) {
      if (method !== 'patch' || !operation.requestBody) continue;
      const ref = String(operation.requestBody.content?.['application/json']?.schema?.$ref ?? `${key}: an inline schema`);
      bodies.set(key, ref.split('/').pop()!);
    }
    return bodies;
  }

  test('every PATCH body class is marked @PartialUpdateBody(), and every marked class is a PATCH body', () => {
    const bodies = patchBodies();
    expect([...bodies.keys()]).toEqual(expect.arrayContaining(['PATCH /agents/{id}', 'PATCH /custom_tools/{id}']));
    const marked = partialUpdateBodySchemas();
    const unmarked = [...bodies].filter(([, name]) => !marked.has(name)).map(([key, name]) =>
      `${key} takes ${name}: add @PartialUpdateBody() (src/common/openapi.ts) to that class, so that its fields carry no defaults in the document`,
    );
    expect(unmarked).toEqual([]);
    const patchSchemas = new Set(bodies.values());
    const stray = [...marked].filter((name) => !patchSchemas.has(name)).map((name) => `${name} is marked @PartialUpdateBody() but is the body of no PATCH operation: remove the marker`);
    expect(stray).toEqual([]);
  });

  test('no `default` keyword in any schema a request body uses; PATCH bodies name no default at all', () => {
    const schemas = requestSchemas();
    expect([...schemas]).toEqual(expect.arrayContaining(['AgentCreateDto', 'AgentUpdateDto']));
    const patchSchemas = new Set(patchBodies().values());
    for (const name of schemas) {
      expect({ name, defaults: JSON.stringify(document.components.schemas[name]).includes('"default":') }).toEqual({ name, defaults: false });
      if (patchSchemas.has(name)) {
        const described = Object.entries(document.components.schemas[name].properties ?? {})
          .filter(([, property]) => String((property as { description?: string }).description ?? '').includes('Default:'))
          .map(([field]) => field);
        expect({ name, described }).toEqual({ name, described: [] });
      }
    }
    for (const { key, operation } of operations()) {
      expect({ key, inline: JSON.stringify(operation.requestBody ?? {}).includes('"default":') }).toEqual({ key, inline: false });
    }
  });

  test('every DELETE answers the one delete acknowledgement, DeleteAcknowledgementDto ({ id, deleted: true })', () => {
    const deletes = operations().filter(({ method }) => method === 'delete');
    expect(deletes.map(({ key }) => key)).toEqual(expect.arrayContaining(['DELETE /agents/{id}', 'DELETE /custom_tools/{id}', 'DELETE /sources/{id}']));
    const answers = deletes.map(({ key, operation }) => {
      const ref = operation.responses?.['200']?.content?.['application/json']?.schema?.$ref as string | undefined;
      const schema = ref ? document.components.schemas[ref.split('/').pop()!] : undefined;
      const data = JSON.stringify(schema ?? {}).match(/"data":\{"\$ref":"#\/components\/schemas\/([A-Za-z]+)"/)?.[1] ?? 'no $ref';
      return `${key} → ${data}`;
    });
    expect(answers).toEqual(deletes.map(({ key }) => `${key} → DeleteAcknowledgementDto`));
    expect(document.components.schemas.DeleteAcknowledgementDto).toMatchObject({ required: ['id', 'deleted'], properties: { deleted: { enum: [true] } } });
  });

  test('request bodies are named <contract type>Dto: POST bodies <Resource>CreateDto, PATCH bodies <Resource>UpdateDto', () => {
    const names = operations()
      .filter(({ method, operation }) => (method === 'post' || method === 'patch') && operation.requestBody)
      .map(({ key, method, operation }) => {
        const ref = String(operation.requestBody.content?.['application/json']?.schema?.$ref ?? 'inline');
        const name = ref.split('/').pop()!;
        const expected = method === 'post' ? /^[A-Z][A-Za-z]*CreateDto$/ : /^[A-Z][A-Za-z]*UpdateDto$/;
        return { key, name, follows: expected.test(name) };
      });
    expect(names.length).toBeGreaterThanOrEqual(4);
    expect(names.filter(({ follows }) => !follows)).toEqual([]);
  });

  test('every schema a request body uses, nested ones included, is a <contract type>Dto class', () => {
    const schemas = [...requestSchemas()];
    expect(schemas).toEqual(expect.arrayContaining(['AgentCreateDto', 'ToolRefInputDto', 'CustomToolAuthInputDto']));
    expect(schemas.filter((name) => !/^[A-Z][A-Za-z]*Dto$/.test(name))).toEqual([]);
  });

  test('every request body has an example ("Try it out" in /docs sends it as it is) that its own schema accepts', () => {
    const validator = new ResponseValidator(document as OpenApiDocument);
    const problems: string[] = [];
    const withBody = operations().filter(({ operation }) => operation.requestBody);
    expect(withBody.map(({ key }) => key)).toEqual(expect.arrayContaining(['POST /agents', 'PATCH /agents/{id}', 'PATCH /custom_tools/{id}']));
    for (const { key, operation } of withBody) {
      const media = operation.requestBody.content?.['application/json'];
      const examples = Object.entries((media?.examples ?? {}) as Record<string, { value?: unknown }>);
      if (examples.length === 0) problems.push(`${key}: no example; add @ApiBody({ type, examples: { … } }) to its handler`);
      for (const [name, example] of examples) {
        const complaint = validator.check(media.schema, example.value);
        if (complaint) problems.push(`${key}: example ${name} does not match the body schema: ${complaint}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test('408 request_timeout on every operation; 413 payload_too_large only where a body is read (an operation that takes a key)', () => {
    for (const { key, operation } of operations()) {
      const readsBody = !PUBLIC_OPERATIONS.includes(key);
      expect({ key, has413: '413' in operation.responses, has408: '408' in operation.responses }).toEqual({ key, has413: readsBody, has408: true });
    }
  });

  test('409 descriptions name their codes', () => {
    const conflict = (path: string, method: string) => document.paths[path][method].responses['409'].description as string;
    expect(conflict('/agents', 'post')).toMatch(/agent_handle_taken[\s\S]*idempotency_key_reused/);
    expect(conflict('/agents/{id}', 'patch')).toMatch(/agent_handle_taken[\s\S]*idempotency_key_reused/);
    expect(conflict('/sources', 'post')).toMatch(/upload[\s\S]*idempotency_key_reused/);
    for (const { key, method, operation } of operations()) {
      if (['post', 'patch'].includes(method) && operation.security?.length) expect({ key, named: /idempotency_key_reused/.test(operation.responses['409']?.description ?? '') }).toEqual({ key, named: true });
    }
  });

  test('trigger_payload is any JSON value or null', () => {
    const schema = document.components.schemas.ConversationDetailDto.properties.trigger_payload;
    const types = (schema.oneOf as Array<{ type: string }>).map((s) => s.type).sort();
    expect(types).toEqual(['array', 'boolean', 'null', 'number', 'object', 'string']);
  });
});
