import { newId } from '../libs/ids/ids';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * One rule for every outbound header a custom tool can set: the names the
 * platform writes itself are refused in each field that names a header, with
 * the same problem, and every value that becomes a header (plain values and
 * credentials) is refused when it holds a control character — through the
 * API (create and update) and the fixture loader alike.
 */

const BASE = '/api/v1/custom_tools';
const REQUIRED = { label: 'Orders Lookup', description: 'Looks an order up.', method: 'GET', url: 'https://api.example.com/orders' };

let t: TestApp;
let org: TestOrg;
let toolId: string;

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
  const created = await t.http.post(BASE).set('Authorization', org.auth).send({ ...REQUIRED, label: 'Patched' });
  toolId = created.body.data.id;
});

afterAll(async () => {
  await t.close();
});

const create = (body: object) => t.http.post(BASE).set('Authorization', org.auth).send({ ...REQUIRED, ...body });
const update = (body: object) => t.http.patch(`${BASE}/${toolId}`).set('Authorization', org.auth).send(body);

/** The fixture keeps `credentials` beside `auth`. */
function asFixture(body: object): object {
  const auth = (body as { auth?: { type: string; credentials?: object } }).auth;
  return auth ? { auth: { type: auth.type }, credentials: auth.credentials } : body;
}

/** The problem the loader reports for one API body, with its path. */
async function fixtureProblem(definition: object): Promise<{ path: string; problem: string }> {
  const orgId = newId('org');
  const fixture = { orgs: [{ id: orgId, name: 'Headers', slug: `headers-${orgId.slice(-8)}`, custom_tools: [{ ...REQUIRED, ...asFixture(definition) }] }] };
  try {
    await t.app.get(FixtureLoader).load(fixture);
  } catch (error) {
    return error as { path: string; problem: string };
  }
  throw new Error('the fixture loader accepted the definition');
}

/** Each field that names an outbound header: the body that sets it to `name`, where the problem lands (API path, fixture path). */
const NAME_FIELDS: Array<[string, (name: string) => object, string | ((name: string) => string), string | ((name: string) => string)]> = [
  ['headers key', (name) => ({ headers: { [name]: 'x' } }), (name) => `headers.${name}`, (name) => `headers.${name}`],
  ['parameters[].headerName', (name) => ({ parameters: [{ name: 'q', in: 'header', headerName: name }] }), 'parameters[0].headerName', 'parameters[0].headerName'],
  ['a header parameter named like the header', (name) => ({ parameters: [{ name, in: 'header' }] }), 'parameters[0].name', 'parameters[0].name'],
  [
    'auth.credentials.header_name',
    (name) => ({ auth: { type: 'api_key', credentials: { apiKey: 'k', header_name: name } } }),
    'auth.credentials.header_name',
    'credentials.header_name',
  ],
];
const fieldAt = (at: string | ((name: string) => string), name: string) => (typeof at === 'string' ? at : at(name));

const RESERVED = [
  'Host',
  'content-length',
  'Transfer-Encoding',
  'TE',
  'Trailer',
  'Expect',
  'Connection',
  'Keep-Alive',
  'Proxy-Connection',
  'Upgrade',
  'Authorization',
  'Proxy-Authorization',
  'Cookie',
  'Forwarded',
  'X-Forwarded-For',
  'x-forwarded-host',
  'X-Real-IP',
];

describe('outbound header names: one reserved set, refused in every field with the same reason', () => {
  it.each(RESERVED)('%s', async (name) => {
    const problems = new Set<string>();
    for (const [, body, apiField, fixtureField] of NAME_FIELDS) {
      const field = fieldAt(apiField, name);
      for (const res of [await create(body(name)), await update(body(name))]) {
        expect(res.status).toBe(422);
        expect(Object.keys(res.body.error.details.fields)).toEqual([field]);
        problems.add(res.body.error.details.fields[field][0]);
      }
      const refused = await fixtureProblem(body(name));
      expect(refused.path).toBe(`orgs[0].custom_tools[0].${fieldAt(fixtureField, name)}`);
      expect(problems).toContain(refused.problem);
    }
    expect(problems.size).toBe(1);
  });

  it('other names stay accepted in every field', async () => {
    for (const [, body] of NAME_FIELDS) {
      for (const name of ['X-Api-Key', 'Accept', 'X-Tenant', 'Forwarded-By-Nobody']) expect((await create(body(name))).status).toBe(201);
    }
  });
});

/** Each value that becomes an outbound header: the body that sets it, where the problem lands (API path, fixture path). */
const VALUE_FIELDS: Array<[string, (value: string) => object, string, string]> = [
  ['headers value', (value) => ({ headers: { 'X-Tenant': value } }), 'headers.X-Tenant', 'headers.X-Tenant'],
  ['bearer token', (value) => ({ auth: { type: 'bearer', credentials: { token: value } } }), 'auth.credentials.token', 'credentials.token'],
  ['api key', (value) => ({ auth: { type: 'api_key', credentials: { apiKey: value } } }), 'auth.credentials.apiKey', 'credentials.apiKey'],
  ['basic username', (value) => ({ auth: { type: 'basic', credentials: { username: value, password: 'p' } } }), 'auth.credentials.username', 'credentials.username'],
  ['basic password', (value) => ({ auth: { type: 'basic', credentials: { username: 'u', password: value } } }), 'auth.credentials.password', 'credentials.password'],
];

describe('outbound header values: no control characters, in plain values and credentials alike', () => {
  const hostile = ['x\r\nHost: evil', 'x\nX-Injected: 1', 'x\rY', 'x\u0000y', 'x\u0007y', 'x\u007fy', 'x\u001by'];
  it.each(VALUE_FIELDS)('%s', async (_label, body, apiField, fixtureField) => {
    for (const value of hostile) {
      for (const res of [await create(body(value)), await update(body(value))]) {
        expect(res.status).toBe(422);
        expect(Object.keys(res.body.error.details.fields)).toEqual([apiField]);
        expect(res.body.error.details.fields[apiField][0]).toMatch(/control characters|NUL character/);
        // the secret is never echoed
        expect(res.text).not.toContain(value);
      }
      expect(await fixtureProblem(body(value))).toMatchObject({ path: `orgs[0].custom_tools[0].${fixtureField}` });
    }
    // tabs, spaces and non-ASCII text stay accepted
    expect((await create(body('a\tb c é'))).status).toBe(201);
  });

  it('a basic user name may not hold the colon that separates it from the password', async () => {
    const res = await create({ auth: { type: 'basic', credentials: { username: 'a:b', password: 'p' } } });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields)).toEqual(['auth.credentials.username']);
    expect((await create({ auth: { type: 'basic', credentials: { username: 'ab', password: 'p:q' } } })).status).toBe(201);
  });
});
