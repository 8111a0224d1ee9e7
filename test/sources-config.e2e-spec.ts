import { eq, sql } from 'drizzle-orm';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from '../libs/ids/ids';
import { packageRoot } from '../src/common/package-root';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { BOUNDS } from '../src/common/input-bounds';
import { sources } from '../src/database/sources.table';
import { MAX_CONFIG_DEPTH } from '../src/sources/sources.rules';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * A source's `config` is "type-specific; additional keys allowed": the keys
 * this service documents keep their types and rules (POST /sources and the
 * fixture loader alike), every other key is stored exactly as sent and never
 * returned; the crawl's path patterns are paths, never URLs; rows stored
 * before the typed keys were checked are brought under them by a migration.
 */

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
});

afterAll(async () => {
  await t.close();
});

const post = (body: object) => t.http.post('/api/v1/sources').set('Authorization', org.auth).send(body);
const postText = (text: string) => t.http.post('/api/v1/sources').set('Authorization', org.auth).set('Content-Type', 'application/json').send(text);
const url = 'https://help.example.com/';

async function storedConfig(id: string): Promise<unknown> {
  const [row] = await t.connection.db.select({ config: sources.config }).from(sources).where(eq(sources.id, id));
  return row.config;
}

async function fixtureProblem(source: object, orgId = newId('org')): Promise<{ path: string; problem: string } | undefined> {
  try {
    await t.app.get(FixtureLoader).load({ orgs: [{ id: orgId, name: 'Config', slug: `config-${orgId.slice(-8)}`, sources: [source] }] });
    return undefined;
  } catch (error) {
    return error as { path: string; problem: string };
  }
}

/** Keys a client may keep beside the documented ones: any name, any JSON value. */
const ADDITIONAL_KEYS: Record<string, unknown> = {
  language: 'en',
  tags: ['docs'],
  notes: { owner: 'support', nested: { deeper: [1, 2.5, null, true] } },
  constructor: { x: 1 },
  toString: 'kept',
  sitemap_url: 'anything: this service never reads it',
  empty: {},
};

describe('POST /sources: config takes additional keys, stored exactly as sent', () => {
  it.each(['website', 'webpage'])('the contract example on %s: 201, stored as sent, never returned', async (type) => {
    const config = { url: 'https://extra.example.com/docs', indexed: false, language: 'en', tags: ['docs'], notes: { owner: 'support' } };
    const res = await post({ type, name: 'Docs', config });
    expect(res.status).toBe(201);
    expect(res.body.data).not.toHaveProperty('config');
    expect(res.text).not.toContain('support');
    expect(await storedConfig(res.body.data.id)).toEqual(config);
  });

  it.each(['website', 'webpage'])('keys named like Object.prototype members are kept on %s, in the API and the fixture loader', async (type) => {
    const config = { url, ...ADDITIONAL_KEYS };
    // sent as text: JSON.stringify of an object literal would not carry these keys as written
    const text = `{"type":${JSON.stringify(type)},"name":"X","config":{"url":${JSON.stringify(url)},${Object.entries(ADDITIONAL_KEYS)
      .map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`)
      .join(',')}}}`;
    const res = await postText(text);
    expect(res.status).toBe(201);
    expect(await storedConfig(res.body.data.id)).toEqual({ ...JSON.parse(text).config, indexed: false });

    const orgId = newId('org');
    const id = newId('source');
    expect(await fixtureProblem({ id, type, name: 'X', config: JSON.parse(JSON.stringify(config)) }, orgId)).toBeUndefined();
    expect(await storedConfig(id)).toEqual({ ...config, indexed: false });
  });

  it('__proto__ is refused by path, in the API and the fixture loader', async () => {
    for (const type of ['website', 'webpage']) {
      const res = await postText(`{"type":"${type}","name":"X","config":{"url":"${url}","__proto__":{"indexed":true},"notes":{"__proto__":1}}}`);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields).sort()).toEqual(['config.__proto__', 'config.notes.__proto__']);
      const config = JSON.parse(`{"url":"${url}","__proto__":{"indexed":true}}`);
      expect(await fixtureProblem({ type, name: 'X', config })).toMatchObject({ path: 'orgs[0].sources[0].config.__proto__' });
    }
  });

  it('the size and nesting bounds hold for additional keys', async () => {
    const nested = (levels: number): unknown => (levels === 0 ? 1 : { a: nested(levels - 1) });
    // config at MAX_CONFIG_DEPTH levels: the whole body is at the body's bound
    const deepest = await post({ type: 'website', name: 'X', config: { url, deep: nested(MAX_CONFIG_DEPTH - 1) } });
    expect(deepest.status).toBe(201);
    const tooDeep = await post({ type: 'website', name: 'X', config: { url, deep: nested(MAX_CONFIG_DEPTH) } });
    expect(tooDeep.status).toBe(422);
    expect(await fixtureProblem({ type: 'website', name: 'X', config: { url, deep: nested(MAX_CONFIG_DEPTH - 1) } })).toBeUndefined();
    expect(await fixtureProblem({ type: 'website', name: 'X', config: { url, deep: nested(MAX_CONFIG_DEPTH) } })).toMatchObject({ path: 'orgs[0].sources[0].config' });

    const big = await post({ type: 'webpage', name: 'X', config: { url, notes: 'x'.repeat(BOUNDS.sourceConfigBytes) } });
    expect(big.status).toBe(422);
    expect(Object.keys(big.body.error.details.fields)).toEqual(['config']);
    expect(big.text).not.toContain('xxxx');
  });
});

describe('POST /sources: the documented keys keep their types and rules', () => {
  it('max_pages and crawl are read for a website; on a webpage they keep their types', async () => {
    const config = { url, indexed: true, max_pages: 500, crawl: { include: ['/docs/**'], exclude: ['/docs/archive/**'], max_depth: 3 } };
    expect((await post({ type: 'website', name: 'X', config })).status).toBe(201);
    expect((await post({ type: 'webpage', name: 'X', config })).status).toBe(201);
    const page = await post({ type: 'webpage', name: 'X', config: { url, max_pages: '500', crawl: { include: ['http://169.254.169.254/'] } } });
    expect(page.status).toBe(422);
    expect(Object.keys(page.body.error.details.fields).sort()).toEqual(['config.crawl.include', 'config.max_pages']);
  });

  it.each([
    [{ url: 'http://169.254.169.254/latest/' }, 'config.url'],
    [{ url: 5 }, 'config.url'],
    [{ url: null }, 'config.url'],
    [{ indexed: 'yes' }, 'config.indexed'],
    [{ max_pages: 0 }, 'config.max_pages'],
    [{ max_pages: 1.5 }, 'config.max_pages'],
    [{ max_pages: '10' }, 'config.max_pages'],
    [{ crawl: [] }, 'config.crawl'],
    [{ crawl: { include: '/docs' } }, 'config.crawl.include'],
    [{ crawl: { exclude: [''] } }, 'config.crawl.exclude'],
    [{ crawl: { exclude: [1] } }, 'config.crawl.exclude'],
    [{ crawl: { max_depth: -1 } }, 'config.crawl.max_depth'],
    // crawl is this service's own object: its keys only
    [{ crawl: { follow: 'http://127.0.0.1/' } }, 'config.crawl.follow'],
  ])('%j → 422 naming %s', async (extra, field) => {
    const config = { url, ...extra };
    const res = await post({ type: 'website', name: 'X', config });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.details.fields)).toEqual([field]);
    expect(await fixtureProblem({ type: 'website', name: 'X', config })).toMatchObject({ path: `orgs[0].sources[0].${field}` });
  });

  it('upload and connector sources (fixtures only) take no config', async () => {
    expect(await fixtureProblem({ type: 'upload', config: { url } })).toMatchObject({ path: 'orgs[0].sources[0].config.url' });
    expect(await fixtureProblem({ type: 'connector', name: 'Zendesk', config: { token: 'x' } })).toMatchObject({ path: 'orgs[0].sources[0].config.token' });
    expect(await fixtureProblem({ type: 'connector', name: 'Zendesk', config: {} })).toBeUndefined();
  });
});

describe('crawl path patterns are paths, not URLs', () => {
  const REFUSED = [
    'http://169.254.169.254/latest/',
    'https://other.example.com/docs/*',
    'HTTP://127.0.0.1/',
    '//169.254.169.254/x',
    'javascript:alert(1)',
    'file:///etc/passwd',
    '\\\\169.254.169.254\\x',
    '/\\169.254.169.254/x',
    ' //169.254.169.254/x',
    '\t/docs',
    '/docs/a b',
  ];
  const ACCEPTED = ['/docs/**', '/blog/*/comments', '*.pdf', 'docs/**', '/search?q=*', '/a:b/c', '/%2F%2Fhost', '*', '/api/v1/*#frag'];

  it.each(REFUSED)('%j in include or exclude → 422, in the API and the fixture loader', async (pattern) => {
    for (const key of ['include', 'exclude']) {
      const config = { url, crawl: { [key]: ['/docs/**', pattern] } };
      const res = await post({ type: 'website', name: 'X', config });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual([`config.crawl.${key}`]);
      expect(await fixtureProblem({ type: 'website', name: 'X', config })).toMatchObject({ path: `orgs[0].sources[0].config.crawl.${key}` });
    }
  });

  it('realistic path patterns are accepted', async () => {
    const res = await post({ type: 'website', name: 'X', config: { url, crawl: { include: ACCEPTED, exclude: ACCEPTED } } });
    expect(res.status).toBe(201);
  });
});

describe('rows stored before the rule: the migration keeps only the keys of the type', () => {
  const migration = readFileSync(join(packageRoot(), 'src/database/migrations/0006_sources_typed_config.sql'), 'utf8');

  it('removes unknown keys (secrets, unchecked URLs) and values of the wrong kind, leaves valid rows as they are', async () => {
    const rows: Array<[string, unknown, unknown]> = [
      ['website', { url, indexed: true, max_pages: 50, crawl: { include: ['/a'], max_depth: 2 } }, { url, indexed: true, max_pages: 50, crawl: { include: ['/a'], max_depth: 2 } }],
      [
        'website',
        { url, indexed: false, sitemap_url: 'http://169.254.169.254/', auth: { password: 'pw' }, max_pages: '9', crawl: { exclude: ['/x', 3], max_depth: 2, proxy: 'p' } },
        { url, indexed: false, crawl: { max_depth: 2 } },
      ],
      ['webpage', { url, indexed: false, max_pages: 5, headers: { Authorization: 'Bearer x' } }, { url, indexed: false }],
      ['upload', { url, webhook_url: 'http://127.0.0.1:6379/' }, {}],
      ['connector', {}, {}],
    ];
    // the migration's statements run on a temporary table of the same name, which shadows the real one
    // inside this transaction only: other tests' rows are never touched
    const after = await t.connection.db
      .transaction(async (tx) => {
        await tx.execute(sql.raw('create temporary table sources (id text primary key, type text not null, config jsonb not null) on commit drop'));
        for (const [i, [type, config]] of rows.entries()) {
          await tx.execute(sql`insert into sources (id, type, config) values (${String(i)}, ${type}, ${JSON.stringify(config)}::jsonb)`);
        }
        for (const statement of migration.split('--> statement-breakpoint')) await tx.execute(sql.raw(statement));
        const result = await tx.execute(sql.raw('select id, config from sources order by id'));
        const found = (result as unknown as { rows: Array<{ id: string; config: unknown }> }).rows;
        throw Object.assign(new Error('rollback'), { found });
      })
      .catch((error: { found?: Array<{ id: string; config: unknown }> }) => {
        if (!error.found) throw error;
        return error.found;
      });
    expect(after.map((row) => (typeof row.config === 'string' ? JSON.parse(row.config) : row.config))).toEqual(rows.map(([, , expected]) => expected));
  });
});
