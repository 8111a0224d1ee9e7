import { eq } from 'drizzle-orm';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../libs/ids/ids';
import { agents } from '../src/agents/agents.table';
import { conversations } from '../src/conversations/conversations.table';
import { sources } from '../src/database/sources.table';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * JSON is taken exactly or refused, on every body that carries free-form
 * JSON (agents' pending_trigger_hint, custom tools' headers, sources' config)
 * and in the fixture loader:
 * - a key named like a member of Object.prototype (or `__proto__`) is an
 *   unknown field where the body has a fixed shape, and is kept as sent in
 *   free-form JSON — except `__proto__`, refused by path there;
 * - a number JavaScript would round, overflow or sign-flip is refused by path,
 *   never stored changed.
 * Bodies are sent as JSON text, since a JavaScript object literal cannot even
 * hold some of these keys as fields.
 */

const KEY_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype', 'valueOf', '__defineGetter__', 'isPrototypeOf'];
/** Numbers that cannot be kept exactly: out of range, rounded, sign lost, underflowed. */
const REFUSED_NUMBERS = ['1e400', '-1e400', '18446744073709551617', '9007199254740993', '-0', '-0.0', '-0e5', '1e-400', '0.10000000000000000001'];
/** Numbers kept with their value (the text may change: `1e2` comes back as 100). */
const KEPT_NUMBERS = ['0', '-1', '1.5', '1e2', '0.1', '1e300', '-2.5e-300', '9007199254740992', '18446744073709552000', '0.0'];

let t: TestApp;
let org: TestOrg;
let dir: string;

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
  dir = mkdtempSync(join(tmpdir(), 'exact-json-'));
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await t.close();
});

let counter = 0;
const unique = () => `${Date.now().toString(36)}${(counter++).toString(36)}`;

/** `base` as JSON text with `field` set to the JSON text `value`. */
function withField(base: object, field: string, value: string): string {
  const text = JSON.stringify(base);
  return `${text.slice(0, -1)}${text === '{}' ? '' : ','}${JSON.stringify(field)}:${value}}`;
}

interface BodyCase {
  name: string;
  method: 'post' | 'patch';
  path: () => Promise<string>;
  base: () => object;
  /** the free-form field, and how the answer shows it back */
  field: string;
  shown: (data: Record<string, unknown>) => unknown;
  /** a free-form value holding `key` (and, when numbers are allowed there, `number`) */
  value: (key: string) => string;
  number?: (number: string) => string;
}

const agentBase = () => ({ handle: `a${unique()}`, name: 'Exact', instructions: 'x' });
const toolBase = () => ({ label: `Exact ${unique()}`, description: 'd', method: 'GET', url: 'https://api.example.com/x' });
const createdId = async (path: string, body: object) => {
  const res = await t.http.post(path).set('Authorization', org.auth).send(body);
  expect(res.status).toBe(201);
  return res.body.data.id as string;
};

const CASES: BodyCase[] = [
  {
    name: 'POST /agents pending_trigger_hint',
    method: 'post',
    path: async () => '/api/v1/agents',
    base: agentBase,
    field: 'pending_trigger_hint',
    shown: (data) => data.pending_trigger_hint,
    value: (key) => `{${JSON.stringify(key)}:{"polluted":1}}`,
    number: (number) => `{"n":${number}}`,
  },
  {
    name: 'PATCH /agents/{id} pending_trigger_hint',
    method: 'patch',
    path: async () => `/api/v1/agents/${await createdId('/api/v1/agents', agentBase())}`,
    base: () => ({}),
    field: 'pending_trigger_hint',
    shown: (data) => data.pending_trigger_hint,
    value: (key) => `{"event":"x",${JSON.stringify(key)}:[1,{"a":null}]}`,
    number: (number) => `{"list":[1,${number}]}`,
  },
  {
    name: 'POST /custom_tools headers',
    method: 'post',
    path: async () => '/api/v1/custom_tools',
    base: toolBase,
    field: 'headers',
    shown: (data) => data.headers,
    value: (key) => `{${JSON.stringify(key)}:"v"}`,
    number: (number) => `{"X-N":${number}}`,
  },
  {
    name: 'PATCH /custom_tools/{id} headers',
    method: 'patch',
    path: async () => `/api/v1/custom_tools/${await createdId('/api/v1/custom_tools', toolBase())}`,
    base: () => ({}),
    field: 'headers',
    shown: (data) => data.headers,
    value: (key) => `{"Accept":"a",${JSON.stringify(key)}:"v"}`,
    number: (number) => `{"X-N":${number}}`,
  },
];

const send = async (c: BodyCase, text: string) =>
  t.http[c.method](await c.path())
    .set('Authorization', org.auth)
    .set('Content-Type', 'application/json')
    .send(text);

describe.each(CASES)('$name', (c) => {
  it.each(KEY_NAMES)('%s as a top-level field is an unknown field (422 naming it)', async (key) => {
    const res = await send(c, withField(c.base(), key, '{"is_active":false}'));
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toEqual({ [key]: [`property ${key} should not exist`] });
  });

  it.each(KEY_NAMES)('%s inside the free-form field: kept exactly, or 422 naming it for __proto__', async (key) => {
    const value = c.value(key);
    const res = await send(c, withField(c.base(), c.field, value));
    if (key === '__proto__') {
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual([`${c.field}.__proto__`]);
    } else {
      expect(res.status).toBe(c.method === 'post' ? 201 : 200);
      // JSON.parse keeps every key as an own property: the answer must say the same
      expect(JSON.stringify(c.shown(res.body.data))).toBe(JSON.stringify(JSON.parse(value)));
    }
  });

  it.each(REFUSED_NUMBERS)('%s in the free-form field is refused by path', async (number) => {
    const res = await send(c, withField(c.base(), c.field, c.number!(number)));
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields)).toHaveLength(1);
    expect(Object.keys(res.body.error.details.fields)[0]).toMatch(new RegExp(`^${c.field}\\.`));
  });
});

describe('POST /sources config (additional keys allowed: free-form beside the documented keys)', () => {
  const sendSource = (text: string) => t.http.post('/api/v1/sources').set('Authorization', org.auth).set('Content-Type', 'application/json').send(text);
  const config = (extra: string) => `{"type":"website","name":"X","config":{"url":"https://help.example.com/",${extra}}}`;

  it.each(KEY_NAMES)('%s: an unknown field at the top level; inside config kept as sent (`__proto__` refused by path)', async (key) => {
    const top = await sendSource(withField({ type: 'website', name: 'X', config: { url: 'https://help.example.com/' } }, key, '{"x":1}'));
    expect(top.status).toBe(422);
    expect(Object.keys(top.body.error.details.fields)).toEqual([key]);
    const inside = await sendSource(config(`${JSON.stringify(key)}:{"x":1}`));
    if (key === '__proto__') {
      expect(inside.status).toBe(422);
      expect(Object.keys(inside.body.error.details.fields)).toEqual([`config.${key}`]);
      return;
    }
    expect(inside.status).toBe(201);
    const [row] = await t.connection.db.select({ config: sources.config }).from(sources).where(eq(sources.id, inside.body.data.id));
    expect(Object.getOwnPropertyDescriptor(row.config, key)?.value).toEqual({ x: 1 });
  });

  it.each(REFUSED_NUMBERS)('%s as config.max_pages or in an additional key is refused by path', async (number) => {
    const res = await sendSource(config(`"max_pages":${number}`));
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields)).toEqual(['config.max_pages']);
    const extra = await sendSource(config(`"notes":{"n":${number}}`));
    expect(extra.status).toBe(422);
    expect(Object.keys(extra.body.error.details.fields)).toEqual(['config.notes.n']);
  });
});

describe('numbers that can be kept are kept with their value', () => {
  it.each(KEPT_NUMBERS)('%s', async (number) => {
    const [c] = CASES;
    const res = await send(c, withField(c.base(), c.field, c.number!(number)));
    expect(res.status).toBe(201);
    expect(res.body.data.pending_trigger_hint).toEqual({ n: Number(number) });
    expect(Object.is(res.body.data.pending_trigger_hint.n, -0)).toBe(false);
  });

  it('a refused number is named wherever it stands, the body root included', async () => {
    const res = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').send('[1e400]');
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toEqual({ '[0]': [expect.stringContaining('too large')] });
    const nested = await send(CASES[0], withField(agentBase(), 'pending_trigger_hint', '{"a":{"1":[0,{"b":18446744073709551617}],"0":1}}'));
    expect(Object.keys(nested.body.error.details.fields)).toEqual(['pending_trigger_hint.a.1[1].b']);
  });
});

describe('GET /conversations: metadata[KEY] filters hold for every key name', () => {
  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])('metadata[%s]', async (key) => {
    const local = await createOrg(t.app);
    const agentId = newId('agent');
    await t.connection.db.insert(agents).values({ id: agentId, orgId: local.orgId, handle: `f${unique()}`, name: 'F' });
    const matching = newId('conversation');
    await t.connection.db.insert(conversations).values([
      { id: matching, orgId: local.orgId, agentId, source: 'dashboard', metadata: JSON.parse(`{${JSON.stringify(key)}:"1"}`) },
      { id: newId('conversation'), orgId: local.orgId, agentId, source: 'dashboard', metadata: { other: '1' } },
    ]);
    const res = await t.http.get(`/api/v1/conversations?metadata[${encodeURIComponent(key)}]=1`).set('Authorization', local.auth);
    expect(res.status).toBe(200);
    expect(res.body.data.map((row: { id: string }) => row.id)).toEqual([matching]);
  });
});

// ------------------------------------------------------------------ the fixture loader, from a file as the CLI reads it

/** Each free-form field of a fixture section: the item that holds `value` there, as JSON text. */
const FIXTURE_FIELDS: Array<[string, string, (value: string) => string]> = [
  ['agents', 'pending_trigger_hint', (value) => withField(agentBase(), 'pending_trigger_hint', value)],
  ['chatbots', 'theme', (value) => withField({ name: 'C' }, 'theme', value)],
  ['conversations', 'metadata', (value) => withField({ source: 'dashboard' }, 'metadata', value)],
  ['conversations', 'trigger_payload', (value) => withField({ source: 'autonomous' }, 'trigger_payload', value)],
  ['triggers', 'conditions', (value) => withField({ connector_type: 'custom', event: 'svc.custom_trigger' }, 'conditions', value)],
  ['triggers', 'settings', (value) => withField({ connector_type: 'custom', event: 'svc.custom_trigger' }, 'settings', value)],
];

async function loadFixture(section: string, item: string): Promise<{ orgId: string; error?: { path: string; problem: string } }> {
  const orgId = newId('org');
  const file = join(dir, `${unique()}.json`);
  writeFileSync(file, `{"orgs":[{"id":"${orgId}","name":"Exact","slug":"exact-${orgId.slice(-8)}","${section}":[${item}]}]}`);
  try {
    await t.app.get(FixtureLoader).loadFile(file);
    return { orgId };
  } catch (error) {
    return { orgId, error: error as { path: string; problem: string } };
  }
}

describe.each(FIXTURE_FIELDS)('fixture %s[].%s', (section, field, item) => {
  it.each(KEY_NAMES)('%s: a top-level item field is unknown; inside the free-form field kept, except __proto__', async (key) => {
    const top = await loadFixture(section, `${item('{}').slice(0, -1)},${JSON.stringify(key)}:{"x":1}}`);
    expect(top.error).toMatchObject({ path: `orgs[0].${section}[0].${key}`, problem: `property ${key} should not exist` });
    const inside = await loadFixture(section, item(`{${JSON.stringify(key)}:{"x":1}}`));
    if (key === '__proto__') expect(inside.error).toMatchObject({ path: `orgs[0].${section}[0].${field}.__proto__` });
    else expect(inside.error).toBeUndefined();
  });

  it.each(REFUSED_NUMBERS)('%s is refused by path', async (number) => {
    const loaded = await loadFixture(section, item(`{"n":${number}}`));
    expect(loaded.error).toMatchObject({ path: `orgs[0].${section}[0].${field}.n` });
  });
});

describe('fixture free-form JSON is stored exactly as sent', () => {
  it('every key name but __proto__, and every number that can be kept', async () => {
    const value = `{"constructor":{"prototype":1},"toString":"x","hasOwnProperty":[1e2,0.1,1e300,-1]}`;
    const agent = await loadFixture('agents', item0(value));
    expect(agent.error).toBeUndefined();
    const [row] = await t.connection.db.select().from(agents).where(eq(agents.orgId, agent.orgId));
    expect(row.pendingTriggerHint).toEqual(JSON.parse(value));
    const conversation = await loadFixture('conversations', withField({ source: 'dashboard' }, 'metadata', value));
    const [stored] = await t.connection.db.select().from(conversations).where(eq(conversations.orgId, conversation.orgId));
    expect(stored.metadata).toEqual(JSON.parse(value));
  });

  it('a fixture handed over as an object: -0 and non-finite numbers are refused by path', async () => {
    for (const n of [-0, Infinity, NaN]) {
      const orgId = newId('org');
      const fixture = { orgs: [{ id: orgId, name: 'Exact', slug: `exact-${orgId.slice(-8)}`, agents: [{ ...agentBase(), pending_trigger_hint: { n } }] }] };
      await expect(t.app.get(FixtureLoader).load(fixture)).rejects.toMatchObject({ path: 'orgs[0].agents[0].pending_trigger_hint.n' });
    }
  });
});

function item0(value: string): string {
  return withField(agentBase(), 'pending_trigger_hint', value);
}
