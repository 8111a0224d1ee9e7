import { and, eq } from 'drizzle-orm';
import { gzipSync } from 'node:zlib';
import { MAX_BODY_BYTES } from '../src/http/request-body';
import { MAX_NUMBER_CHARS } from '../src/common/exact-json';
import { FIELD_ERROR_BOUNDS } from '../src/common/field-errors';
import { MAX_BODY_CONTAINERS, MAX_BODY_DEPTH, MAX_OBJECT_KEYS } from '../src/common/validation';
import { BOUNDS } from '../src/common/input-bounds';
import { idempotencyRecords } from '../src/idempotency/idempotency.table';
import { MAX_RECORD_BYTES } from '../src/idempotency/idempotency.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Pathological bodies on every route that reads one: each is answered
 * with a bounded answer, a bounded stored record, and at most a small
 * multiple of the CPU an ordinary body of the same size costs on the same
 * route (docs/decisions.md, "Hostile input: bounded work and answers").
 *
 * Where the work is shared, it is probed once: every body goes through the
 * one body reader (body-parser.ts), which refuses a body by its shape or its
 * numbers before the key is looked at and before any route's code, so those
 * probes run on one route, and a cheap probe shows each route's body takes
 * that reader. What reaches the validation pipe is judged against the
 * route's own DTO, so those probes run on every route.
 *
 * CPU, not wall-clock time: `process.cpuUsage()` around the request, client
 * and server in this process. The ordinary body is measured in the same test,
 * interleaved with the pathological one, and each figure is the least of its
 * rounds: another process on the machine takes the CPU away between
 * requests but adds no CPU time to this one, and what this process adds
 * (a garbage collection landing in a request) only ever raises a figure, so
 * the least is the one closest to the request's own work. Measured on a
 * loaded two-core machine: at most 2 for most probes, 3 to 5 for 10,000
 * small objects or `__proto__` keys, 6 to 8 for nesting at the bound inside
 * free-form JSON (objects and arrays are far denser per byte than strings,
 * and each costs more); RATIO is more than twice the largest. Before the
 * fixes the same inputs measured tens to thousands of times the ordinary
 * body, or did not finish.
 */
const RATIO = 20;
/** rounds of each body; the probe's first request, with its key, is the pathological body's first */
const ROUNDS = 2;
/** a bound on any error answer here, whatever the request: every 422 stays under it (field-errors.ts) */
const MAX_ERROR_ANSWER = 24 * 1024;
/** a quarter of the 1 MiB limit: the old costs grew faster than the size, so they show here already, in a test that stays short */
const SIZE = 256 * 1024;

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
});

afterAll(async () => t.close());

let counter = 0;
const unique = () => `${Date.now().toString(36)}${(counter++).toString(36)}`;

interface Route {
  name: string;
  method: 'post' | 'patch';
  path: () => Promise<string>;
  /** the route's own fields, as JSON text without braces, where a probe adds its bulk */
  fields: () => string;
  /** a free-form field of the route, where nested probes go */
  freeForm: string;
}

const created = async (path: string, body: object) => {
  const res = await t.http.post(path).set('Authorization', org.auth).send(body);
  expect(res.status).toBe(201);
  return `${path}/${res.body.data.id as string}`;
};
const agentFields = () => `"handle":"a${unique()}","name":"Probe","instructions":"x"`;
const toolFields = () => `"label":"Probe ${unique()}","description":"d","method":"GET","url":"https://api.example.com/x"`;

const ROUTES: Route[] = [
  { name: 'POST /agents', method: 'post', path: async () => '/api/v1/agents', fields: agentFields, freeForm: 'pending_trigger_hint' },
  {
    name: 'PATCH /agents/{id}',
    method: 'patch',
    path: () => created('/api/v1/agents', { handle: `a${unique()}`, name: 'P', instructions: 'x' }),
    fields: () => '"name":"Probe"',
    freeForm: 'pending_trigger_hint',
  },
  { name: 'POST /sources', method: 'post', path: async () => '/api/v1/sources', fields: () => `"type":"website","name":"Probe ${unique()}"`, freeForm: 'config' },
  { name: 'POST /custom_tools', method: 'post', path: async () => '/api/v1/custom_tools', fields: toolFields, freeForm: 'headers' },
  {
    name: 'PATCH /custom_tools/{id}',
    method: 'patch',
    path: () => created('/api/v1/custom_tools', { label: `P ${unique()}`, description: 'd', method: 'GET', url: 'https://api.example.com/x' }),
    fields: () => '"description":"Probe"',
    freeForm: 'headers',
  },
];

/**
 * `{<fields>,"<field>":<open>item,item,…<close>}`: `count` items, or as many
 * as make the body `size` bytes.
 */
function padded(route: Route, field: string, open: string, item: string, close: string, extent: { size?: number; count?: number } = {}): string {
  const head = `{${route.fields()},"${field}":${open}`;
  const tail = `${close}}`;
  const count = extent.count ?? Math.max(1, Math.floor(((extent.size ?? SIZE) - head.length - tail.length) / (item.length + 1)));
  return head + Array(count).fill(item).join(',') + tail;
}

/** the route's fields and one field holding `value` */
const withField = (route: Route, field: string, value: string) => `{${route.fields()},"${field}":${value}}`;

function keys(count: number, prefix = 'k'): string {
  return Array.from({ length: count }, (_v, i) => `"${prefix}${i}":0`).join(',');
}

interface Probe {
  name: string;
  body: (route: Route) => string;
  gzip?: boolean;
  status: number;
  /** how many fields the answer has in all (details.field_count), when it says */
  fieldCount?: number;
}

/** refused by the body reader, whatever the route: run on one route */
const READER_PROBES: Probe[] = [
  { name: 'a million-digit negative exponent, gzip', body: (r) => withField(r, r.freeForm, `{"n":1e-${'9'.repeat(SIZE - 300)}}`), gzip: true, status: 422, fieldCount: 1 },
  { name: 'a million-digit positive exponent', body: (r) => withField(r, r.freeForm, `{"n":1e+${'9'.repeat(SIZE - 300)}}`), status: 422, fieldCount: 1 },
  { name: 'a long run of zeros inside a number (1.000…0001)', body: (r) => withField(r, r.freeForm, `{"n":1.${'0'.repeat(SIZE - 300)}1}`), status: 422, fieldCount: 1 },
  { name: `numbers of ${MAX_NUMBER_CHARS} characters, each with a run of zeros`, body: (r) => padded(r, r.freeForm, '{"n":[', `1.${'0'.repeat(MAX_NUMBER_CHARS - 3)}1`, ']}'), status: 422 },
  { name: 'a megabyte of digits', body: (r) => withField(r, r.freeForm, `{"n":${'7'.repeat(SIZE - 300)}}`), status: 422, fieldCount: 1 },
  { name: 'many inexact numbers, gzip', body: (r) => padded(r, r.freeForm, '{"n":[', '1e400', ']}'), gzip: true, status: 422 },
  { name: '90,000 keys in one object', body: (r) => withField(r, r.freeForm, `{${keys(90_000)}}`), status: 422, fieldCount: 1 },
  { name: '90,000 keys at the top', body: (r) => `{${r.fields()},${keys(90_000)}}`, status: 422, fieldCount: 1 },
  { name: 'one key sent 100,000 times', body: (r) => padded(r, r.freeForm, '{', '"a":1e400', '}'), status: 422, fieldCount: 1 },
  { name: 'nesting a million levels deep', body: (r) => withField(r, r.freeForm, `${'['.repeat(SIZE / 2 - 200)}${']'.repeat(SIZE / 2 - 200)}`), status: 422, fieldCount: 1 },
  { name: 'a third of a million empty objects', body: (r) => padded(r, r.freeForm, '{"n":[', '{}', ']}'), status: 422, fieldCount: 1 },
  { name: 'a key of a megabyte', body: (r) => withField(r, r.freeForm, `{"${'k'.repeat(SIZE - 300)}":1e400}`), status: 422, fieldCount: 1 },
];

/** within the reader's bounds, judged by the validation pipe against the route's DTO: run on every route */
const PIPE_PROBES: Probe[] = [
  { name: `${MAX_OBJECT_KEYS} unknown fields at the top`, body: (r) => `{${r.fields()},${keys(MAX_OBJECT_KEYS - 10, 'unknown_field_with_a_long_name_')}}`, status: 422 },
  {
    name: `nesting at the bound (${MAX_BODY_DEPTH} levels), repeated`,
    body: (r) => padded(r, r.freeForm, '{"n":[', `${'['.repeat(MAX_BODY_DEPTH - 3)}${']'.repeat(MAX_BODY_DEPTH - 3)}`, ']}', { count: Math.floor(MAX_BODY_CONTAINERS / MAX_BODY_DEPTH) }),
    status: 422,
  },
  { name: `${MAX_BODY_CONTAINERS} objects, at the bound`, body: (r) => padded(r, r.freeForm, '{"n":[', '{"k":"a short value"}', ']}', { count: MAX_BODY_CONTAINERS - 10 }), status: 422 },
  { name: 'strings holding U+0000', body: (r) => padded(r, r.freeForm, '{"n":[', '"\\u0000"', ']}'), status: 422 },
  { name: 'keys named __proto__', body: (r) => padded(r, r.freeForm, '{"n":[', '{"__proto__":1}', ']}', { count: MAX_BODY_CONTAINERS - 10 }), status: 422 },
];

/** the ordinary body of the same size: the route's fields and many short strings, which every step reads */
const ordinary = (route: Route, size: number) => padded(route, 'notes', '[', '"an ordinary short text"', ']', { size });

const cpuMicros = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

async function send(route: Route, path: string, body: string, gzip = false, key?: string) {
  const req = t.http[route.method](path).set('Authorization', org.auth).set('Content-Type', 'application/json');
  if (key) req.set('Idempotency-Key', key);
  if (gzip) req.set('Content-Encoding', 'gzip');
  const payload = gzip ? gzipSync(body) : body;
  const started = process.cpuUsage();
  const res = await req.serialize(() => payload as unknown as string).send({});
  return { res, cpu: cpuMicros(started) };
}

/** The bytes of the answer stored under this key, or null when none was (a body refused by the reader, before the key is looked at). */
async function storedBytes(key: string): Promise<number | null> {
  const [record] = await t.connection.db
    .select({ body: idempotencyRecords.body })
    .from(idempotencyRecords)
    .where(and(eq(idempotencyRecords.orgId, org.orgId), eq(idempotencyRecords.key, key)));
  return record ? Buffer.byteLength(JSON.stringify(record.body)) : null;
}

/** Sends the probe twice with one key and once more, then the ordinary body of its size: asserts the answers, the record and the CPU ratio. */
async function probeRoute(route: Route, path: string, probe: Probe, reader: boolean): Promise<void> {
  const body = probe.body(route);
  const key = `probe-${unique()}`;
  const first = await send(route, path, body, probe.gzip, key);

  expect(first.res.status).toBe(probe.status);
  expect(first.res.body.error).toEqual(expect.objectContaining({ code: 'validation_failed', request_id: first.res.headers['x-request-id'] }));
  expect(first.res.text.length).toBeLessThan(MAX_ERROR_ANSWER);
  const { fields, field_count: count } = first.res.body.error.details as { fields: Record<string, string[]>; field_count: number };
  expect(Object.keys(fields).length).toBeGreaterThan(0);
  expect(Object.keys(fields).length).toBeLessThanOrEqual(FIELD_ERROR_BOUNDS.fields);
  expect(count).toBeGreaterThanOrEqual(Object.keys(fields).length);
  if (probe.fieldCount !== undefined) expect(count).toBe(probe.fieldCount);

  // the reader refuses before the key is looked at: nothing stored, answered again alike;
  // the pipe's 422 is the operation's own: stored as answered and replayed exactly
  const stored = await storedBytes(key);
  const again = await send(route, path, body, probe.gzip, key);
  expect({ ...again.res.body.error, request_id: null }).toEqual({ ...first.res.body.error, request_id: null });
  if (reader) {
    expect(stored).toBeNull();
  } else {
    expect(stored).not.toBeNull();
    expect(stored).toBeLessThan(MAX_ERROR_ANSWER);
    expect(again.res.headers['idempotent-replayed']).toBe('true');
  }

  const pathological = [first.cpu];
  const usual: number[] = [];
  const ordinaryBody = ordinary(route, body.length);
  for (let round = 0; round < ROUNDS; round++) {
    usual.push((await send(route, path, ordinaryBody)).cpu);
    if (round > 0) pathological.push((await send(route, path, body, probe.gzip)).cpu);
  }
  const ratio = Math.min(...pathological) / Math.min(...usual);
  if (process.env.PROBE_LOG) console.log(`${route.name} | ${probe.name} | ${ratio.toFixed(2)}`);
  expect(ratio).toBeLessThan(RATIO);
}

describe(`the body reader's refusals (${ROUTES[0].name}; every route's body takes the same reader)`, () => {
  let path: string;
  beforeAll(async () => {
    path = await ROUTES[0].path();
  });

  it.each(READER_PROBES)('$name: bounded answer, fields, nothing stored, CPU', (probe) => probeRoute(ROUTES[0], path, probe, true));

  it('a decompression bomb at the size limit: 413 once the inflated body passes 1 MiB, the rest never inflated', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * MAX_BODY_BYTES, 0x20));
    const res = await t.http.post(path)
      .set('Authorization', org.auth)
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .serialize(() => bomb as unknown as string)
      .send({});
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    expect(res.text.length).toBeLessThan(1024);
  });

  // the cheap proof that the probes above hold for every route: the reader's own refusal
  // (a number it cannot store, before the key is looked at) on each route's body
  it.each(ROUTES)("$name: the body goes through the reader", async (route) => {
    const key = `probe-${unique()}`;
    const { res } = await send(route, await route.path(), withField(route, route.freeForm, '{"n":1e400}'), false, key);
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields as object)).toEqual([`${route.freeForm}.n`]);
    expect(await storedBytes(key)).toBeNull();
  });
});

describe.each(ROUTES)('$name: bodies the validation pipe judges', (route) => {
  let path: string;
  beforeAll(async () => {
    path = await route.path();
  });

  it.each(PIPE_PROBES)('$name: bounded answer, fields, stored record and CPU', (probe) => probeRoute(route, path, probe, false));
});

describe('bounded storage: the largest answers are stored whole, under MAX_RECORD_BYTES, and replayed exactly', () => {
  /** six bytes as JSON for one character, the most any character takes (a control character's \u escape) */
  const widest = (length: number) => '\u0001'.repeat(length);

  it('an agent with its text fields at their bounds, every character at its widest', async () => {
    const create = { handle: `a${unique()}`, name: widest(BOUNDS.name), description: widest(BOUNDS.agentDescription), instructions: widest(BOUNDS.instructions) };
    const created = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send(create);
    expect(created.status).toBe(201);
    const update = {
      instructions_html: widest(BOUNDS.instructions),
      model: widest(BOUNDS.name),
      tools: Array.from({ length: BOUNDS.agentTools }, (_v, i) => ({ name: `${i}${widest(BOUNDS.name - String(i).length)}`, connector_id: null })),
    };
    const key = `largest-${unique()}`;
    const patch = () => t.http.patch(`/api/v1/agents/${created.body.data.id as string}`).set('Authorization', org.auth).set('Idempotency-Key', key).send(update);
    const first = await patch();
    expect(first.status).toBe(200);

    const stored = await storedBytes(key);
    // both instruction fields alone are 1.2 MB as JSON: this is the largest an agent's text can answer
    expect(stored).toBeGreaterThan(2 * 6 * BOUNDS.instructions);
    expect(stored).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    if (process.env.PROBE_LOG) console.log(`the widest agent: ${stored} bytes stored`);
    const again = await patch();
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text.replace(again.body.meta.request_id as string, '')).toBe(first.text.replace(first.body.meta.request_id as string, ''));
  });

  it('the 422 naming the most fields is stored under the error bound', async () => {
    const route = ROUTES[0];
    const key = `widest-422-${unique()}`;
    // every key an unknown field, each named past the length a path is cut at
    const unknown = Array.from({ length: MAX_OBJECT_KEYS - 10 }, (_v, i) => `"${i}_${'k'.repeat(300)}":0`).join(',');
    const { res } = await send(route, '/api/v1/agents', `{${route.fields()},${unknown}}`, false, key);
    expect(res.status).toBe(422);
    // named until the characters the answer may spend on them run out (field-errors.ts), all counted
    expect(Object.keys(res.body.error.details.fields as object).length).toBeLessThanOrEqual(FIELD_ERROR_BOUNDS.fields);
    expect(res.body.error.details.field_count).toBe(MAX_OBJECT_KEYS - 10);
    const stored = await storedBytes(key);
    if (process.env.PROBE_LOG) console.log(`the widest 422: ${stored} bytes stored`);
    expect(stored).toBeLessThan(MAX_ERROR_ANSWER);
  });
});
