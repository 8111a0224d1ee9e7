import { newObjectIdHex } from '../libs/ids/ids';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { createOrg, type TestOrg } from './support/factories';
import { freshDemo } from './support/fresh-demo';
import { orgRows } from './support/org-rows';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * A key belongs to one organization and only that organization's data
 * is visible. Organization B is the bundled demo (every kind of row) under
 * fresh ids; organization A's full-scope key calls every served operation
 * that takes an id with B's REAL ids. Each must answer 404 in the error
 * envelope, show nothing of B and change nothing of B, while B's own key
 * reads the same ids (so the ids are real and only scoping refuses them).
 * The operations are read from the served document: every operation with a
 * path id, called with its documented request example (a valid body, so
 * that only scoping can refuse it). A new route is covered without an edit
 * here; one that cannot be covered so goes in OPT_OUTS with the reason.
 */
let t: TestApp;
let a: TestOrg;
let b: { orgId: string; auth: string; ids: Map<string, string[]> };
let document: { paths: Record<string, Record<string, Operation>> };

interface Operation {
  parameters?: PathParameter[];
  requestBody?: { content?: Record<string, { examples?: Record<string, { value?: Record<string, unknown> }> }> };
}

/** "METHOD /path" → why the operation is left out of this test (none today). */
const OPT_OUTS: Record<string, string> = {};

type PathParameter = { in: string; name: string; schema?: { pattern?: string } };

/** The id prefix a path parameter takes, read from its documented pattern (`^agent_[a-f0-9]{24}$` → `agent`). */
function prefixOf(operation: string, parameter: PathParameter): string {
  const prefix = /^\^\(?([a-z]+)_/.exec(parameter.schema?.pattern ?? '')?.[1];
  if (!prefix) throw new Error(`${operation} {${parameter.name}}: its pattern (${parameter.schema?.pattern}) names no id prefix; use idPattern() of src/common/input-bounds.ts`);
  return prefix;
}

/** The path parameters of an operation ("GET /agents/{id}"). */
function pathParameters(operation: string): PathParameter[] {
  const [method, path] = operation.split(' ');
  return (document.paths[path][method.toLowerCase()].parameters ?? []).filter((p) => p.in === 'path');
}

/** Every `id` of a fixture organization's rows, nested rows included, by prefix. */
function idsByPrefix(node: unknown, found = new Map<string, string[]>()): Map<string, string[]> {
  if (Array.isArray(node)) node.forEach((item) => idsByPrefix(item, found));
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      const prefix = key === 'id' && typeof value === 'string' ? /^([a-z]+)_[a-f0-9]{24}$/.exec(value)?.[1] : undefined;
      if (prefix) found.set(prefix, [...(found.get(prefix) ?? []), value as string].sort());
      else idsByPrefix(value, found);
    }
  }
  return found;
}

/** Every served operation with a path id ("GET /agents/{id}"), opt-outs included. */
function servedIdOperations(): string[] {
  const operations: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      if (item[method] && /\{[^}]+\}/.test(path)) operations.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return operations.sort();
}

/** The operations this test calls: every id-taking one but the opt-outs. */
function cases(): string[] {
  return servedIdOperations().filter((operation) => !(operation in OPT_OUTS));
}

/** The operation's documented request example (the first), if it takes a body. */
function exampleBody(operation: string): Record<string, unknown> | undefined {
  const [method, path] = operation.split(' ');
  const examples = document.paths[path][method.toLowerCase()].requestBody?.content?.['application/json']?.examples;
  return examples ? Object.values(examples)[0]?.value : undefined;
}

/** Every row of one organization: what must not change. */
const snapshot = (orgId: string) => orgRows(t.connection, orgId);

beforeAll(async () => {
  t = await createTestApp();
  a = await createOrg(t.app);
  const demo = freshDemo(t.app).document;
  const loaded = await t.app.get(FixtureLoader).load(demo);
  const orgId = loaded.orgs[0].id;
  document = (await t.http.get('/api/v1/openapi.json')).body;
  // B's ids, by the prefix a path parameter's pattern names: no assumption about table or path names
  const ids = idsByPrefix(demo.orgs[0]);
  b = { orgId, auth: `Bearer ${loaded.generated_keys[0].token}`, ids };
});
afterAll(() => t.close());

/** The path with B's ids filled in: one URL per form the parameter accepts (prefixed; bare 24-hex where allowed). */
function urlsFor(operation: string): string[] {
  const path = operation.split(' ')[1];
  const parameters = pathParameters(operation);
  expect(parameters.length).toBeGreaterThan(0);
  let forms = [path];
  for (const parameter of parameters) {
    const prefix = prefixOf(operation, parameter);
    const id = b.ids.get(prefix)?.[0];
    if (!id) throw new Error(`organization B has no ${prefix}_ row for ${operation}: add one to the demo rows of its fixture section`);
    const bareAllowed = parameter.schema?.pattern?.includes('|[a-f0-9]{24}') ?? false;
    const values = bareAllowed ? [id, id.slice(id.lastIndexOf('_') + 1)] : [id];
    forms = forms.flatMap((form) => values.map((value) => form.replace(`{${parameter.name}}`, value)));
  }
  return forms.map((form) => `/api/v1${form}`);
}

function send(method: string, url: string, auth: string, body?: Record<string, unknown>) {
  const req = t.http[method.toLowerCase() as 'get' | 'patch' | 'delete' | 'post' | 'put'](url).set('Authorization', auth);
  return body ? req.send(body) : req;
}

describe("another organization's real ids answer 404 on every id-taking route, and reveal or change nothing", () => {
  test('the cases are the served id-taking operations; an opt-out names one that is served', () => {
    const served = servedIdOperations();
    expect(served).toEqual(expect.arrayContaining(['GET /agents/{id}', 'PATCH /agents/{id}', 'DELETE /sources/{id}', 'GET /conversations/{id}/messages']));
    expect(Object.keys(OPT_OUTS).filter((operation) => !served.includes(operation))).toEqual([]);
  });

  test('every id-taking operation with a body documents an example to send', () => {
    const withBody = cases().filter((operation) => {
      const [method, path] = operation.split(' ');
      return document.paths[path][method.toLowerCase()].requestBody !== undefined;
    });
    expect(withBody).toEqual(expect.arrayContaining(['PATCH /agents/{id}', 'PATCH /custom_tools/{id}']));
    expect(withBody.filter((operation) => exampleBody(operation) === undefined)).toEqual([]);
  });

  test("B's own key reads its ids on every GET case: the ids are real", async () => {
    for (const operation of cases().filter((op) => op.startsWith('GET '))) {
      for (const url of urlsFor(operation)) {
        const res = await t.http.get(url).set('Authorization', b.auth);
        expect({ url, status: res.status }).toEqual({ url, status: 200 });
      }
    }
  });

  test("A's full-scope key gets 404 not_found for each, in the envelope, with no data; B's rows are unchanged", async () => {
    // B's key was used just before: its batched last-use write must not land between the two snapshots
    await t.app.get(ApiKeysService).flushLastUsed();
    const before = await snapshot(b.orgId);
    const failures: string[] = [];
    let covered = 0;
    for (const operation of cases()) {
      const method = operation.split(' ')[0];
      const urls = urlsFor(operation);
      for (const url of urls) {
        const res = await send(method, url, a.auth, exampleBody(operation));
        const ok =
          res.status === 404 &&
          /not_found$/.test(res.body?.error?.code) &&
          res.body.error.request_id === res.headers['x-request-id'] &&
          JSON.stringify(Object.keys(res.body).sort()) === '["error"]' &&
          JSON.stringify(Object.keys(res.body.error).sort()) === '["code","message","request_id"]';
        if (!ok) failures.push(`${method} ${url} → ${res.status} ${JSON.stringify(res.body)}`);
      }
      if (urls.length > 0) covered += 1;
    }
    expect(failures).toEqual([]);
    // every served id-taking operation was called with at least one real id of B's
    expect({ covered }).toEqual({ covered: cases().length });
    expect(await snapshot(b.orgId)).toBe(before);
  });

  test('made-up well-formed, bare and malformed ids → 404 in the envelope too', async () => {
    const failures: string[] = [];
    for (const operation of cases()) {
      const [method, path] = operation.split(' ');
      for (const make of [(prefix: string) => `${prefix}_${newObjectIdHex()}`, () => newObjectIdHex(), () => 'not-an-id', () => 'agent_ZZZ']) {
        const prefixes = new Map(pathParameters(operation).map((parameter) => [parameter.name, prefixOf(operation, parameter)]));
        const url = `/api/v1${path.replace(/\{([^}]+)\}/g, (_m, name: string) => make(prefixes.get(name)!))}`;
        const res = await send(method, url, a.auth, exampleBody(operation));
        if (res.status !== 404 || !/not_found$/.test(res.body?.error?.code)) failures.push(`${method} ${url} → ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
    expect(failures).toEqual([]);
  });
});

describe('org-scoped reads show only the calling organization', () => {
  test('GET /org, /team and every list of two organizations never mix', async () => {
    expect((await t.http.get('/api/v1/org').set('Authorization', a.auth)).body.data.id).toBe(a.orgId);
    expect((await t.http.get('/api/v1/org').set('Authorization', b.auth)).body.data.id).toBe(b.orgId);
    const everyIdOfB = [...b.ids.values()].flat();
    for (const [path, item] of Object.entries(document.paths)) {
      if (!item.get || path.includes('{')) continue;
      const res = await t.http.get(`/api/v1${path}`).set('Authorization', a.auth);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      const text = JSON.stringify(res.body);
      expect({ path, leaked: everyIdOfB.filter((id) => text.includes(id)) }).toEqual({ path, leaked: [] });
    }
  });
});
