import { METHOD_METADATA } from '@nestjs/common/constants';
import { RequestMethod, type Type } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { CURRENT_REPRESENTATION } from '../src/conditional/conditional.decorators';
import { createOrg, type TestOrg } from './support/factories';
import { insertChatbot, insertConnector, insertConversation, insertTrigger } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
});
afterAll(() => t.close());

const api = (path: string) => `/api/v1${path}`;
const handle = () => `c${randomUUID().replace(/-/g, '').slice(0, 12)}`;

async function createAgent(body: Record<string, unknown> = {}) {
  const res = await t.http
    .post(api('/agents'))
    .set('Authorization', org.auth)
    .send({ handle: handle(), name: 'Conditional', instructions: 'x', ...body })
    .expect(201);
  return { agent: res.body.data as { id: string; name: string; tools_count: number }, etag: res.headers.etag as string };
}

async function read(path: string) {
  const res = await t.http.get(api(path)).set('Authorization', org.auth).expect(200);
  return { body: res.body.data as Record<string, unknown>, etag: res.headers.etag as string };
}

describe('ETag on every answer that carries one resource', () => {
  it('GET, POST and PATCH of an agent carry a strong ETag; it changes when the agent changes, and only then', async () => {
    const { agent, etag: created } = await createAgent();
    expect(created).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const first = await read(`/agents/${agent.id}`);
    expect(first.etag).toBe(created);
    // a bare id answers the same representation
    expect((await read(`/agents/${agent.id.slice('agent_'.length)}`)).etag).toBe(created);
    expect((await read(`/agents/${agent.id}`)).etag).toBe(created);

    const patched = await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).send({ name: 'Renamed' }).expect(200);
    expect(patched.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(patched.headers.etag).not.toBe(created);
    expect((await read(`/agents/${agent.id}`)).etag).toBe(patched.headers.etag);
  });

  it('custom tools, sources, the organization and the other single reads carry one; lists and deletes do not', async () => {
    const tool = await t.http
      .post(api('/custom_tools'))
      .set('Authorization', org.auth)
      .send({ label: 'Orders API list orders', description: 'Lists orders.', method: 'GET', url: 'https://api.example.com/orders' })
      .expect(201);
    expect(tool.headers.etag).toBeDefined();
    expect((await read(`/custom_tools/${tool.body.data.id}`)).etag).toBe(tool.headers.etag);
    const source = await t.http
      .post(api('/sources'))
      .set('Authorization', org.auth)
      .send({ type: 'webpage', name: 'Docs', config: { url: 'https://example.com/docs' } })
      .expect(201);
    expect((await read(`/sources/${source.body.data.id}`)).etag).toBe(source.headers.etag);
    expect((await read('/org')).etag).toMatch(/^"/);

    const list = await t.http.get(api('/agents')).set('Authorization', org.auth).expect(200);
    expect(list.headers.etag).toBeUndefined();
    const deleted = await t.http.delete(api(`/custom_tools/${tool.body.data.id}`)).set('Authorization', org.auth).expect(200);
    expect(deleted.headers.etag).toBeUndefined();
    const failed = await t.http.get(api('/agents/agent_000000000000000000000000')).set('Authorization', org.auth).expect(404);
    expect(failed.headers.etag).toBeUndefined();
  });
});

describe('the read-only single resources', () => {
  it('a connector, a conversation, a trigger and a chatbot carry an ETag, stable across reads, and answer 304 to it', async () => {
    const db = t.connection.db;
    const paths = [
      `/connectors/${await insertConnector(db, org.orgId)}`,
      `/conversations/${await insertConversation(db, org.orgId, {}, [{ role: 'user', content: 'Hello' }])}`,
      `/triggers/${await insertTrigger(db, org.orgId)}`,
      `/chatbots/${await insertChatbot(db, org.orgId)}`,
    ];
    for (const path of paths) {
      const { etag } = await read(path);
      expect({ path, etag }).toEqual({ path, etag: expect.stringMatching(/^"[A-Za-z0-9_-]+"$/) });
      expect((await read(path)).etag).toBe(etag);
      const res = await t.http.get(api(path)).set('Authorization', org.auth).set('If-None-Match', etag);
      expect({ path, status: res.status, etag: res.headers.etag }).toEqual({ path, status: 304, etag });
    }
  });
});

describe('If-None-Match on a GET of one resource', () => {
  it('answers 304 with no body, the ETag and X-Request-ID while the tag is current; 200 once it is not', async () => {
    const { agent, etag } = await createAgent();
    const res = await t.http.get(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-None-Match', etag).set('X-Request-ID', 'req-304');
    expect(res.status).toBe(304);
    expect(res.text ?? '').toBe('');
    expect(res.headers.etag).toBe(etag);
    expect(res.headers['x-request-id']).toBe('req-304');
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.headers['x-ratelimit-remaining']).toBeDefined();

    for (const header of [`W/${etag}`, `"other", ${etag}`, '*']) {
      await t.http.get(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-None-Match', header).expect(304);
    }
    const other = await t.http.get(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-None-Match', '"other"').expect(200);
    expect(other.body.data.id).toBe(agent.id);

    await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).send({ description: 'changed' }).expect(200);
    const changed = await t.http.get(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-None-Match', etag).expect(200);
    expect(changed.body.data.description).toBe('changed');
  });

  it('a 304 counts against the rate limit', async () => {
    const limited = await createTestApp({ rateLimitPerMinute: 2 });
    try {
      const own = await createOrg(limited.app);
      const created = await limited.http
        .post(api('/agents'))
        .set('Authorization', own.auth)
        .send({ handle: handle(), name: 'Limited', instructions: 'x' })
        .expect(201);
      const get = () => limited.http.get(api(`/agents/${created.body.data.id}`)).set('Authorization', own.auth).set('If-None-Match', created.headers.etag);
      expect((await get()).status).toBe(304);
      expect((await get()).status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('If-Match on PATCH and DELETE', () => {
  it('a current tag lets the PATCH through; a stale one answers 412 precondition_failed and changes nothing', async () => {
    const { agent, etag } = await createAgent();
    const ok = await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', etag).send({ name: 'First' }).expect(200);
    expect(ok.body.data.name).toBe('First');

    const stale = await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', etag).send({ name: 'Second' });
    expect(stale.status).toBe(412);
    expect(stale.body).toEqual({ error: { code: 'precondition_failed', message: expect.any(String), request_id: stale.headers['x-request-id'] } });
    expect((await read(`/agents/${agent.id}`)).body.name).toBe('First');
  });

  it('`*` holds for any current version, a list holds when one tag is current, a weak or malformed tag never does', async () => {
    const { agent, etag } = await createAgent();
    for (const header of [`W/${etag}`, etag.slice(1, -1), `${etag} junk`, '"nope"']) {
      const res = await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', header).send({ name: 'X' });
      expect({ header, status: res.status }).toEqual({ header, status: 412 });
    }
    const listed = await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', `"old", ${etag}`).send({ name: 'Listed' }).expect(200);
    await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', '*').send({ name: 'Any' }).expect(200);
    expect(listed.headers.etag).not.toBe(etag);
  });

  it('an unknown resource answers its 404, with or without the header', async () => {
    await t.http.patch(api('/agents/agent_000000000000000000000000')).set('Authorization', org.auth).set('If-Match', '*').send({ name: 'X' }).expect(404);
    await t.http.delete(api('/custom_tools/tool_000000000000000000000000')).set('Authorization', org.auth).set('If-Match', '"x"').expect(404);
  });

  it('DELETE of an agent, a custom tool and a source: 412 on a stale tag (still there), 200 on the current one', async () => {
    const { agent, etag } = await createAgent();
    await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).send({ description: 'moved on' }).expect(200);
    await t.http.delete(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', etag).expect(412);
    const current = await read(`/agents/${agent.id}`);
    await t.http.delete(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', current.etag).expect(200);

    const tool = await t.http
      .post(api('/custom_tools'))
      .set('Authorization', org.auth)
      .send({ label: 'Orders API get order', description: 'Gets an order.', method: 'GET', url: 'https://api.example.com/order' })
      .expect(201);
    await t.http.patch(api(`/custom_tools/${tool.body.data.id}`)).set('Authorization', org.auth).set('If-Match', tool.headers.etag).send({ description: 'Gets one order.' }).expect(200);
    await t.http.delete(api(`/custom_tools/${tool.body.data.id}`)).set('Authorization', org.auth).set('If-Match', tool.headers.etag).expect(412);
    const toolNow = await read(`/custom_tools/${tool.body.data.id}`);
    await t.http.delete(api(`/custom_tools/${tool.body.data.id}`)).set('Authorization', org.auth).set('If-Match', toolNow.etag).expect(200);

    const source = await t.http
      .post(api('/sources'))
      .set('Authorization', org.auth)
      .send({ type: 'webpage', name: 'Page', config: { url: 'https://example.com/page' } })
      .expect(201);
    await t.http.delete(api(`/sources/${source.body.data.id}`)).set('Authorization', org.auth).set('If-Match', '"stale"').expect(412);
    await t.http.get(api(`/sources/${source.body.data.id}`)).set('Authorization', org.auth).expect(200);
    await t.http.delete(api(`/sources/${source.body.data.id}`)).set('Authorization', org.auth).set('If-Match', source.headers.etag).expect(200);
  });

  it('every PATCH and DELETE route declares where its current representation comes from', () => {
    const missing: string[] = [];
    for (const module of t.app.get(ModulesContainer).values()) {
      for (const wrapper of module.controllers.values()) {
        const controller = wrapper.metatype as Type;
        const prototype = controller.prototype as Record<string, unknown>;
        for (const name of Object.getOwnPropertyNames(prototype)) {
          const handler = prototype[name];
          if (typeof handler !== 'function') continue;
          const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
          if (method !== RequestMethod.PATCH && method !== RequestMethod.DELETE) continue;
          const declared = Reflect.getMetadata(CURRENT_REPRESENTATION, handler) ?? Reflect.getMetadata(CURRENT_REPRESENTATION, controller);
          if (!declared) missing.push(`${controller.name}.${name}: add @ConditionalWrites(<its service>) to the controller`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('two editors of one agent cannot overwrite each other silently', () => {
  it('both read, both PATCH tools with If-Match: one succeeds, the other gets 412 and, after re-reading, keeps both changes', async () => {
    const { agent } = await createAgent({ tools: [{ name: 'search_knowledge' }] });
    const [a, b] = await Promise.all([read(`/agents/${agent.id}`), read(`/agents/${agent.id}`)]);
    expect(a.etag).toBe(b.etag);
    const send = (etag: string, tools: unknown[]) => t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', etag).send({ tools });
    const base = [{ name: 'search_knowledge', connector_id: null }];
    const results = await Promise.all([send(a.etag, [...base, { name: 'web_browse' }]), send(b.etag, [...base, { name: 'web_search' }])]);
    expect(results.map((res) => res.status).sort()).toEqual([200, 412]);

    // the loser reads again and appends its tool to the list it now sees
    const loser = results[0].status === 412 ? 'web_browse' : 'web_search';
    const reread = await t.http.get(api(`/agents/${agent.id}`)).set('Authorization', org.auth).expect(200);
    const seen = reread.body.data.tools as Array<{ name: string; connector_id: string | null }>;
    expect(seen).toHaveLength(2);
    await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('If-Match', reread.headers.etag).send({ tools: [...seen, { name: loser }] }).expect(200);
    const stored = (await read(`/agents/${agent.id}`)).body.tools as Array<{ name: string }>;
    expect(stored.map(({ name }) => name).sort()).toEqual(['search_knowledge', 'web_browse', 'web_search']);
  });
});

describe('If-Match and Idempotency-Key', () => {
  it('a retry of a committed conditional PATCH replays its answer and its ETag, though the tag it names is now stale', async () => {
    const { agent, etag } = await createAgent();
    const key = `k-${randomUUID()}`;
    const send = () => t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('Idempotency-Key', key).set('If-Match', etag).send({ name: 'Once' });
    const first = await send();
    expect(first.status).toBe(200);
    const replay = await send();
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers.etag).toBe(first.headers.etag);
    expect(replay.body.data).toEqual(first.body.data);
  });

  it('the fingerprint is method, path and body, as the contract says: another If-Match with the same key and body is a replay, not a 409', async () => {
    const { agent, etag } = await createAgent();
    const key = `k-${randomUUID()}`;
    const send = (ifMatch: string | null, body: object) => {
      const req = t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('Idempotency-Key', key);
      return (ifMatch === null ? req : req.set('If-Match', ifMatch)).send(body);
    };
    const first = await send(etag, { name: 'Keyed' }).expect(200);
    // '*', a tag the agent never had, no header at all: the stored answer each time, nothing run again
    for (const ifMatch of ['*', '"never-its-tag"', null]) {
      const replay = await send(ifMatch, { name: 'Keyed' });
      expect({ ifMatch, status: replay.status, replayed: replay.headers['idempotent-replayed'], etag: replay.headers.etag }).toEqual({
        ifMatch,
        status: 200,
        replayed: 'true',
        etag: first.headers.etag,
      });
    }
    // the body is in the fingerprint: the same key with another body is refused
    const reused = await send(first.headers.etag, { name: 'Other' }).expect(409);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    expect((await read(`/agents/${agent.id}`)).body.name).toBe('Keyed');
  });

  it('a create replay carries the stored ETag', async () => {
    const key = `k-${randomUUID()}`;
    const body = { handle: handle(), name: 'Replayed', instructions: 'x' };
    const first = await t.http.post(api('/agents')).set('Authorization', org.auth).set('Idempotency-Key', key).send(body).expect(201);
    const replay = await t.http.post(api('/agents')).set('Authorization', org.auth).set('Idempotency-Key', key).send(body).expect(201);
    expect(replay.headers.etag).toBe(first.headers.etag);
  });

  it('a 412 is not stored: the same key with the same body runs once its tag is current', async () => {
    const { agent } = await createAgent();
    const key = `k-${randomUUID()}`;
    const send = (tag: string) => t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).set('Idempotency-Key', key).set('If-Match', tag).send({ name: 'Later' });
    await send('"stale"').expect(412);
    const current = await read(`/agents/${agent.id}`);
    const res = await send(current.etag).expect(200);
    expect(res.body.data.name).toBe('Later');
  });
});

describe('requests without the headers', () => {
  it('answer as before: no precondition is evaluated', async () => {
    const { agent } = await createAgent();
    await t.http.patch(api(`/agents/${agent.id}`)).set('Authorization', org.auth).send({ name: 'Plain' }).expect(200);
    await t.http.delete(api(`/agents/${agent.id}`)).set('Authorization', org.auth).expect(200);
  });
});

describe('the served document', () => {
  it('documents ETag, If-None-Match / 304 on single reads and If-Match / 412 on every PATCH and DELETE', async () => {
    const doc = (await t.http.get(api('/openapi.json')).expect(200)).body as {
      paths: Record<string, Record<string, { parameters?: Array<{ name: string }>; responses: Record<string, { headers?: Record<string, unknown> }> }>>;
    };
    const problems: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const names = (op.parameters ?? []).map((p) => p.name);
        if (method === 'patch' || method === 'delete') {
          if (!names.includes('If-Match') || !op.responses['412']) problems.push(`${method} ${path}: If-Match / 412`);
        }
        if (method === 'get' && op.responses['200']?.headers?.ETag && (!names.includes('If-None-Match') || !op.responses['304'])) problems.push(`${method} ${path}: 304`);
      }
    }
    expect(problems).toEqual([]);
    for (const path of ['/agents/{id}', '/custom_tools/{id}', '/sources/{id}', '/conversations/{id}', '/org', '/chatbots/{id}', '/triggers/{id}', '/connectors/{id}']) {
      expect({ path, etag: Boolean(doc.paths[path].get.responses['200'].headers?.ETag) }).toEqual({ path, etag: true });
    }
    expect(doc.paths['/agents'].post.responses['201'].headers?.ETag).toBeDefined();
    expect(doc.paths['/agents/{id}'].patch.responses['200'].headers?.ETag).toBeDefined();
    expect(doc.paths['/agents'].get.responses['200'].headers?.ETag).toBeUndefined();
  });
});
