import { and, eq } from 'drizzle-orm';
import { newId } from '../libs/ids/ids';
import { SCOPES, type Scope } from '../src/auth/scopes';
import { sources } from '../src/database/sources.table';
import { documents } from '../src/database/sources.table';
import { BOUNDS } from '../src/common/input-bounds';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { readAgentRow } from './support/agent-rows';
import { insertAgent } from './support/readside-rows';
import { documentIdsOf, insertDocumentRows } from './support/document-rows';

const BASE = '/api/v1/sources';

let t: TestApp;

const api = {
  get: (org: { auth: string }, path: string) => t.http.get(path).set('Authorization', org.auth),
  post: (org: { auth: string }, body: unknown) => t.http.post(BASE).set('Authorization', org.auth).send(body as object),
  delete: (org: { auth: string }, path: string) => t.http.delete(path).set('Authorization', org.auth),
};

async function createSource(org: TestOrg, overrides: Record<string, unknown> = {}) {
  const res = await api.post(org, { type: 'website', name: 'Help center', config: { url: 'https://help.example.com/' }, ...overrides });
  expect(res.status).toBe(201);
  return res.body.data;
}

async function storedSource(id: string) {
  const [row] = await t.connection.db.select().from(sources).where(eq(sources.id, id));
  return row;
}

async function uploadSourceOf(orgId: string) {
  const rows = await t.connection.db
    .select()
    .from(sources)
    .where(and(eq(sources.orgId, orgId), eq(sources.type, 'upload')));
  return rows;
}

beforeAll(async () => {
  t = await createTestApp();
});

afterAll(async () => {
  await t.close();
});

describe('POST /sources creates website and webpage sources', () => {
  it('returns 201 with sync_status fetching, document_count null, and exactly the Source fields', async () => {
    const org = await createOrg(t.app);
    const res = await api.post(org, { type: 'website', name: 'Docs site', config: { url: 'https://docs.example.com/', max_pages: 50 } });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^source_[a-f0-9]{24}$/),
      type: 'website',
      name: 'Docs site',
      connector_id: null,
      connector_type: null,
      sync_status: 'fetching',
      last_sync_at: null,
      document_count: null,
      is_active: true,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    // config is kept (indexed defaults to false, other keys stay) but is not part of the Source response
    expect((await storedSource(res.body.data.id)).config).toEqual({ url: 'https://docs.example.com/', max_pages: 50, indexed: false });

    const page = await createSource(org, { type: 'webpage', name: 'Pricing', config: { url: 'https://example.com/pricing', indexed: true } });
    expect(page).toMatchObject({ type: 'webpage', sync_status: 'fetching', document_count: null });
    expect((await storedSource(page.id)).config).toEqual({ url: 'https://example.com/pricing', indexed: true });
  });

  it('type upload → 409 conflict: the singleton already exists', async () => {
    const org = await createOrg(t.app);
    // whatever else the body holds: invalid or unknown fields do not turn the 409 into a 422
    const others = [{ name: '' }, { name: 'x', config: null }, { name: 'x', foo: 1 }, { name: 5, config: 'nope', extra: true }];
    for (const body of [{ type: 'upload', name: 'More files' }, { type: 'upload' }, ...others.map((other) => ({ type: 'upload', ...other }))]) {
      const res = await api.post(org, body);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('conflict');
    }
    expect(await uploadSourceOf(org.orgId)).toHaveLength(1);
  });

  it('type connector → 422; any other type → 422', async () => {
    const org = await createOrg(t.app);
    const connector = await api.post(org, { type: 'connector', name: 'Zendesk', config: { url: 'https://x.example.com/' } });
    expect(connector.status).toBe(422);
    expect(connector.body.error.code).toBe('validation_failed');
    expect(Object.keys(connector.body.error.details.fields)).toEqual(['type']);
    // judged before the other fields: the 422 names `type`, not the invalid name or the unknown field
    const connectorWithBadFields = await api.post(org, { type: 'connector', name: '', foo: 1 });
    expect(connectorWithBadFields.status).toBe(422);
    expect(Object.keys(connectorWithBadFields.body.error.details.fields)).toEqual(['type']);
    for (const type of ['rss', 'WEBSITE', '', 5, null]) {
      const res = await api.post(org, { type, name: 'X', config: { url: 'https://x.example.com/' } });
      expect(res.status).toBe(422);
      expect(res.body.error.details.fields).toHaveProperty('type');
    }
    const missing = await api.post(org, { name: 'X', config: { url: 'https://x.example.com/' } });
    expect(missing.status).toBe(422);
  });

  it('name and config.url are required; config.url follows the custom tool URL rules', async () => {
    const org = await createOrg(t.app);
    const noName = await api.post(org, { type: 'website', config: { url: 'https://x.example.com/' } });
    expect(noName.status).toBe(422);
    expect(Object.keys(noName.body.error.details.fields)).toEqual(['name']);
    for (const body of [{ type: 'website', name: 'X' }, { type: 'webpage', name: 'X', config: {} }, { type: 'website', name: 'X', config: { url: 42 } }]) {
      const res = await api.post(org, body);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual(['config.url']);
    }
    for (const url of [
      'ftp://example.com/',
      'not a url',
      'http://localhost/',
      'http://127.0.0.1/',
      'http://10.1.2.3/',
      'http://169.254.169.254/',
      'http://metadata.google.internal/',
      'http://[::ffff:127.0.0.1]/',
      'http://2130706433/',
      'http://[fd00:ec2::254]/',
      'http://host.docker.internal/',
      'http://kubernetes.default.svc/',
      'http://[::ffff:0:7f00:1]/',
    ]) {
      const res = await api.post(org, { type: 'website', name: 'X', config: { url } });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual(['config.url']);
    }
    expect((await api.get(org, BASE)).body.data).toHaveLength(1); // only the upload singleton
  });

  it(`config is bounded: indexed must be boolean, at most ${BOUNDS.sourceConfigBytes} bytes; unknown top-level fields are 422`, async () => {
    const org = await createOrg(t.app);
    const url = 'https://x.example.com/';
    const indexed = await api.post(org, { type: 'website', name: 'X', config: { url, indexed: 'yes' } });
    expect(Object.keys(indexed.body.error.details.fields)).toEqual(['config.indexed']);
    const exclude = Array.from({ length: Math.ceil(BOUNDS.sourceConfigBytes / 2000) }, (_, i) => `/${i}/${'x'.repeat(2000)}`);
    const big = await api.post(org, { type: 'website', name: 'X', config: { url, crawl: { exclude } } });
    expect(Object.keys(big.body.error.details.fields)).toEqual(['config']);
    expect((await api.post(org, { type: 'website', name: 'X', config: [url] })).status).toBe(422);
    expect((await api.post(org, { type: 'website', name: 'X', config: { url }, sync_status: 'ready' })).status).toBe(422);
    expect((await api.post(org, { type: 'website', name: 'X', config: { url }, document_count: 5 })).status).toBe(422);
  });
});

describe('GET /sources lists and fetches sources', () => {
  it('lists the upload singleton (created with the organization) and created sources, newest first, paginated', async () => {
    const org = await createOrg(t.app);
    const [upload] = await uploadSourceOf(org.orgId);
    const a = await createSource(org, { name: 'A' });
    const b = await createSource(org, { name: 'B' });
    const all = await api.get(org, BASE);
    expect(all.status).toBe(200);
    expect(all.body.data.map((source: { id: string }) => source.id)).toEqual([b.id, a.id, upload.id]);
    expect(all.body.data[2]).toMatchObject({ type: 'upload', sync_status: 'ready', document_count: 0 });
    expect(all.body.meta.next_cursor).toBeNull();
    const page1 = await api.get(org, `${BASE}?limit=2`);
    expect(page1.body.data).toHaveLength(2);
    const page2 = await api.get(org, `${BASE}?limit=2&cursor=${encodeURIComponent(page1.body.meta.next_cursor)}`);
    expect(page2.body.data.map((source: { id: string }) => source.id)).toEqual([upload.id]);
    expect((await api.get(org, `${BASE}?limit=101`)).status).toBe(422);
  });

  it('fetches one source; 404 not_found for unknown or malformed ids', async () => {
    const org = await createOrg(t.app);
    const source = await createSource(org);
    const res = await api.get(org, `${BASE}/${source.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(source);
    for (const id of [newId('source'), 'source_xyz', source.id.slice('source_'.length), newId('customTool')]) {
      const missing = await api.get(org, `${BASE}/${id}`);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
    }
  });
});

describe('DELETE /sources/{id} removes the source, its documents and every agent reference', () => {
  it('cleans three agents (one soft-deleted), keeps other references, leaves other organizations alone; second DELETE → 404', async () => {
    const org = await createOrg(t.app);
    const other = await createOrg(t.app);
    const source = await createSource(org, { name: 'To delete' });
    const keep = await createSource(org, { name: 'To keep' });
    const docs = await insertDocumentRows(t, org.orgId, source.id, ['a.html', 'b.html']);
    const keptDocs = await insertDocumentRows(t, org.orgId, keep.id, ['c.html']);
    const ref = { source_id: source.id, scope: 'selected' as const, documents: docs };
    const keepRef = { source_id: keep.id, scope: 'all' as const };

    const live = await insertAgent(t.connection.db, org.orgId, { dataSources: [ref, keepRef] });
    const onlyThis = await insertAgent(t.connection.db, org.orgId, { dataSources: [{ source_id: source.id, scope: 'all' }] });
    const trashed = await insertAgent(t.connection.db, org.orgId, { dataSources: [keepRef, ref], deletedAt: new Date() });
    const otherOrgAgent = await insertAgent(t.connection.db, other.orgId, { dataSources: [{ source_id: source.id, scope: 'all' }] });

    const res = await api.delete(org, `${BASE}/${source.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: source.id, deleted: true });

    expect((await readAgentRow(t, org.orgId, live))!.dataSources).toEqual([keepRef]);
    expect((await readAgentRow(t, org.orgId, onlyThis))!.dataSources).toEqual([]);
    expect((await readAgentRow(t, org.orgId, trashed))!.dataSources).toEqual([keepRef]);
    expect((await readAgentRow(t, other.orgId, otherOrgAgent))!.dataSources).toEqual([{ source_id: source.id, scope: 'all' }]);
    expect(await documentIdsOf(t, source.id)).toEqual([]);
    expect(await documentIdsOf(t, keep.id)).toEqual(keptDocs);
    expect(await storedSource(source.id)).toBeUndefined();

    expect((await api.get(org, `${BASE}/${source.id}`)).status).toBe(404);
    const again = await api.delete(org, `${BASE}/${source.id}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
  });

  it('concurrent DELETEs of one source: one 200, one 404, no 500', async () => {
    const org = await createOrg(t.app);
    const source = await createSource(org);
    await insertDocumentRows(t, org.orgId, source.id, ['x']);
    const results = await Promise.all([api.delete(org, `${BASE}/${source.id}`), api.delete(org, `${BASE}/${source.id}`)]);
    expect(results.map((res) => res.status).sort()).toEqual([200, 404]);
  });

  it('the upload source: its documents and references go with its id, and a fresh empty upload source replaces it', async () => {
    const org = await createOrg(t.app);
    const [upload] = await uploadSourceOf(org.orgId);
    await insertDocumentRows(t, org.orgId, upload.id, ['contract.pdf']);
    const agent = await insertAgent(t.connection.db, org.orgId, { dataSources: [{ source_id: upload.id, scope: 'all' }] });

    const res = await api.delete(org, `${BASE}/${upload.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: upload.id, deleted: true });
    expect(await documentIdsOf(t, upload.id)).toEqual([]);
    expect((await readAgentRow(t, org.orgId, agent))!.dataSources).toEqual([]);
    expect((await api.get(org, `${BASE}/${upload.id}`)).status).toBe(404);

    const uploads = await uploadSourceOf(org.orgId);
    expect(uploads).toHaveLength(1);
    expect(uploads[0].id).not.toBe(upload.id);
    expect(uploads[0].documentCount).toBe(0);
    expect((await api.post(org, { type: 'upload', name: 'Files' })).status).toBe(409);
  });

  it('a connector source is deleted like any other', async () => {
    const org = await createOrg(t.app);
    const id = newId('source');
    await t.connection.db.insert(sources).values({ id, orgId: org.orgId, type: 'connector', name: 'Guide', connectorId: newId('connector'), connectorType: 'zendesk', documentCount: 3 });
    await insertDocumentRows(t, org.orgId, id, ['article-1']);
    const listed = await api.get(org, `${BASE}/${id}`);
    expect(listed.body.data).toMatchObject({ type: 'connector', connector_type: 'zendesk', document_count: 3 });
    expect((await api.delete(org, `${BASE}/${id}`)).status).toBe(200);
    expect(await documentIdsOf(t, id)).toEqual([]);
  });
});

describe('plan cap limits.sources', () => {
  it('creating beyond the cap returns 422 naming the limit; the upload singleton does not count', async () => {
    const org = await createOrg(t.app, { limits: { sources: 2 } });
    await createSource(org, { name: 'One' });
    await createSource(org, { name: 'Two' });
    const res = await api.post(org, { type: 'webpage', name: 'Three', config: { url: 'https://example.com/three' } });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details).toEqual({ limit: 'sources', max: 2, fields: { 'limits.sources': [expect.any(String)] }, field_count: 1 });
    expect(res.body.error.message).toContain('limits.sources');
  });

  it('holds under concurrent creates', async () => {
    const org = await createOrg(t.app, { limits: { sources: 2 } });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => api.post(org, { type: 'website', name: `S${i}`, config: { url: `https://s${i}.example.com/` } })),
    );
    expect(results.map((res) => res.status).sort()).toEqual([201, 201, 422, 422, 422, 422]);
    expect((await api.get(org, BASE)).body.data).toHaveLength(3);
  });
});

describe('scopes: sources:read / :write / :delete', () => {
  const without = (scope: Scope) => SCOPES.filter((candidate) => candidate !== scope);

  it('each endpoint answers 403 insufficient_scope without its scope', async () => {
    const org = await createOrg(t.app);
    const source = await createSource(org);
    const noRead = await org.key(without('sources:read'));
    const noWrite = await org.key(without('sources:write'));
    const noDelete = await org.key(without('sources:delete'));
    const results = await Promise.all([
      api.get(noRead, BASE),
      api.get(noRead, `${BASE}/${source.id}`),
      api.post(noWrite, { type: 'website', name: 'Denied', config: { url: 'https://x.example.com/' } }),
      api.delete(noDelete, `${BASE}/${source.id}`),
    ]);
    for (const res of results) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
    }
    expect((await api.get(org, `${BASE}/${source.id}`)).status).toBe(200);
    const onlyWrite = await org.key(['sources:write']);
    expect((await api.post(onlyWrite, { type: 'website', name: 'Ok', config: { url: 'https://x.example.com/' } })).status).toBe(201);
  });
});

describe('organization isolation', () => {
  it('another organization sees only its own upload source and gets 404 for foreign ids', async () => {
    const a = await createOrg(t.app);
    const b = await createOrg(t.app);
    const source = await createSource(a);
    const [aUpload] = await uploadSourceOf(a.orgId);
    const [bUpload] = await uploadSourceOf(b.orgId);
    const list = await api.get(b, BASE);
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([bUpload.id]);
    for (const id of [source.id, aUpload.id]) {
      for (const res of [await api.get(b, `${BASE}/${id}`), await api.delete(b, `${BASE}/${id}`)]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
    }
    expect((await api.get(a, `${BASE}/${source.id}`)).status).toBe(200);
    expect(await uploadSourceOf(a.orgId)).toEqual([aUpload]);
  });
});

describe('fixture section sources', () => {
  const org = (orgId: string, sourcesSection: unknown) => ({
    orgs: [{ id: orgId, name: `Sources ${orgId.slice(-6)}`, slug: `sources-${orgId.slice(-10)}`, sources: sourcesSection }],
  });

  it('upserts the upload source onto the singleton, writes documents, keeps document_count as given, and is safe to load twice', async () => {
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    const websiteId = newId('source');
    const uploadDoc = newId('document');
    const siteDoc = newId('document');
    const fixture = org(orgId, [
      { type: 'upload', name: 'My uploads', document_count: 7, documents: [{ id: uploadDoc, name: 'a.pdf' }] },
      {
        id: websiteId,
        type: 'website',
        name: 'Site',
        sync_status: 'ready',
        document_count: 120,
        config: { url: 'https://site.example.com/' },
        documents: [{ id: siteDoc, name: 'Home' }, { name: 'About' }],
      },
    ]);
    await loader.load(fixture);
    await loader.load(fixture);
    const uploads = await uploadSourceOf(orgId);
    expect(uploads).toHaveLength(1);
    expect(uploads[0]).toMatchObject({ name: 'My uploads', documentCount: 7 });
    expect(await documentIdsOf(t, uploads[0].id)).toEqual([uploadDoc]);
    expect(await storedSource(websiteId)).toMatchObject({ syncStatus: 'ready', documentCount: 120, config: { url: 'https://site.example.com/', indexed: false } });
    expect(await documentIdsOf(t, websiteId)).toContain(siteDoc);
  });

  it('an upload source with an id replaces the auto-created singleton', async () => {
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    const uploadId = newId('source');
    await loader.load(org(orgId, [{ id: uploadId, type: 'upload' }]));
    const uploads = await uploadSourceOf(orgId);
    expect(uploads.map((row) => row.id)).toEqual([uploadId]);
  });

  it('rejects a bad source naming the path, writing nothing', async () => {
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    await expect(loader.load(org(orgId, [{ type: 'website', name: 'X', config: { url: 'http://192.168.1.1/' } }]))).rejects.toMatchObject({
      path: 'orgs[0].sources[0].config.url',
    });
    await expect(loader.load(org(orgId, [{ type: 'upload' }, { type: 'upload' }]))).rejects.toMatchObject({ path: 'orgs[0].sources[1].type' });
    await expect(loader.load(org(orgId, [{ type: 'website' }]))).rejects.toMatchObject({ path: 'orgs[0].sources[0].name' });
    // refused as POST refuses them (a null name used to give a website the upload source's name)
    await expect(loader.load(org(orgId, [{ type: 'website', name: null, config: { url: 'https://example.com/' } }]))).rejects.toMatchObject({ path: 'orgs[0].sources[0].name' });
    await expect(loader.load(org(orgId, [{ type: 'website', name: 'X', config: null }]))).rejects.toMatchObject({ path: 'orgs[0].sources[0].config' });
    expect(await t.connection.db.select().from(sources).where(eq(sources.orgId, orgId))).toEqual([]);
  });

  it('the demo data file is a valid sources section', async () => {
    const demo = (await import('../src/sources/sources.demo.json')).default as Array<Record<string, unknown>>;
    const loader = t.app.get(FixtureLoader);
    const orgId = newId('org');
    expect(() => loader.parse(org(orgId, demo))).not.toThrow();
    // written without its fixed ids, so the test also passes on a database that already holds the demo
    const withoutIds = demo.map(({ id: _id, documents: docs, ...rest }) => ({
      ...rest,
      ...(Array.isArray(docs) ? { documents: docs.map(({ id: _docId, ...doc }: Record<string, unknown>) => doc) } : {}),
    }));
    await loader.load(org(orgId, withoutIds));
    const rows = await t.connection.db.select().from(sources).where(eq(sources.orgId, orgId));
    expect(rows).toHaveLength(demo.length);
    const docs = await t.connection.db.select().from(documents).where(eq(documents.orgId, orgId));
    expect(docs.length).toBeGreaterThan(0);
  });
});

describe('OpenAPI document', () => {
  it('describes every source operation', async () => {
    const res = await t.http.get('/api/v1/openapi.json');
    const paths = res.body.paths;
    const list = paths['/api/v1/sources'] ?? paths['/sources'];
    const item = paths['/api/v1/sources/{id}'] ?? paths['/sources/{id}'];
    expect(list.get.operationId).toBe('listSources');
    expect(list.post.operationId).toBe('createSource');
    expect(item.get.operationId).toBe('getSource');
    expect(item.delete.operationId).toBe('deleteSource');
    expect(item.patch).toBeUndefined();
  });
});
