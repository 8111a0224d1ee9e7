import { gzipSync } from 'node:zlib';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Text PostgreSQL would store as something else — invalid UTF-8
 * bytes, unpaired surrogates (`\ud800` escapes) — anywhere in a JSON body,
 * keys included, is 422 validation_failed naming the field; nothing is
 * stored. Before, both became U+FFFD and were stored (201).
 */
let t: TestApp;
let org: TestOrg;
beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
});
afterAll(() => t.close());

let counter = 0;
const handle = () => `text${Date.now().toString(36)}${++counter}`;
const UNPAIRED = 'must be valid UTF-8 text (no invalid bytes, no unpaired surrogate such as \\ud800)';

/** A JSON body whose `name` value (or a key) is spliced with raw bytes. */
function bytesBody(before: string, raw: number[], after: string): Buffer {
  return Buffer.concat([Buffer.from(before, 'utf8'), Buffer.from(raw), Buffer.from(after, 'utf8')]);
}

async function post(body: Buffer, headers: Record<string, string> = {}) {
  let req = t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json');
  for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
  // the bytes as they are: superagent would JSON-encode a Buffer
  return req.serialize((bytes: Buffer) => bytes as never).send(body);
}

async function agentCount(): Promise<number> {
  const res = await t.http.get('/api/v1/agents?limit=100').set('Authorization', org.auth);
  expect(res.status).toBe(200);
  return res.body.data.length;
}

describe('invalid UTF-8 bytes', () => {
  test.each<[string, number[]]>([
    ['a lone continuation byte', [0x80]],
    ['0xFF', [0xff]],
    ['a truncated 3-byte sequence', [0xe2, 0x82]],
    ['an overlong encoding of "/"', [0xc0, 0xaf]],
    ['an encoded surrogate (CESU-8)', [0xed, 0xa0, 0x80]],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
  ])('%s in a string value: 422 naming the field, nothing stored', async (_name, raw) => {
    const before = await agentCount();
    const h = handle();
    const res = await post(bytesBody(`{"handle":"${h}","name":"Sup`, raw, `port","instructions":"Help."}`));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.fields).toEqual({ name: [UNPAIRED] });
    expect(await agentCount()).toBe(before);
  });

  test('in a key, nested, and after gzip: the path is named with the byte escaped', async () => {
    const body = bytesBody(`{"handle":"${handle()}","name":"S","instructions":"Help.","metadata":{"k`, [0xfe], `y":"v"}}`);
    const res = await post(gzipSync(body), { 'Content-Encoding': 'gzip' });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toEqual({ 'metadata.k\\udcfey': [UNPAIRED] });
  });

  test('valid multi-byte text (é, 中, 😀, U+FFFD sent as such) is stored as sent', async () => {
    const name = 'é中😀\ufffd';
    const res = await post(Buffer.from(JSON.stringify({ handle: handle(), name, instructions: 'Help.' }), 'utf8'));
    expect(res.status).toBe(201);
    expect(res.body.data.name).toBe(name);
  });
});

describe('unpaired surrogates (JSON \\u escapes)', () => {
  test.each<[string, string, string]>([
    ['a high surrogate in a value', '"name":"x\\ud800"', 'name'],
    ['a low surrogate in a value', '"name":"\\udc00x"', 'name'],
    ['a reversed pair', '"name":"\\udc00\\ud800"', 'name'],
    ['a surrogate in a nested key', '"name":"ok","metadata":{"a\\ud800b":"v"}', 'metadata.a\\ud800b'],
  ])('%s: 422 naming the path, nothing stored', async (_name, fragment, field) => {
    const before = await agentCount();
    const res = await post(Buffer.from(`{"handle":"${handle()}","instructions":"Help.",${fragment}}`));
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toEqual({ [field]: [UNPAIRED] });
    expect(await agentCount()).toBe(before);
  });

  test('an escaped pair is one character and is stored', async () => {
    const res = await post(Buffer.from(`{"handle":"${handle()}","name":"smile \\ud83d\\ude00","instructions":"Help."}`));
    expect(res.status).toBe(201);
    expect(res.body.data.name).toBe('smile 😀');
  });

  test('on PATCH too', async () => {
    const created = await post(Buffer.from(JSON.stringify({ handle: handle(), name: 'Before', instructions: 'Help.' })));
    expect(created.status).toBe(201);
    const res = await t.http
      .patch(`/api/v1/agents/${created.body.data.id}`)
      .set('Authorization', org.auth)
      .set('Content-Type', 'application/json')
      .serialize((bytes: Buffer) => bytes as never)
      .send(bytesBody('{"instructions":"a', [0xc3], 'b"}'));
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toEqual({ instructions: [UNPAIRED] });
    const after = await t.http.get(`/api/v1/agents/${created.body.data.id}`).set('Authorization', org.auth);
    expect(after.body.data.instructions).toBe('Help.');
  });
});
