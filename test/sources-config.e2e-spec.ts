import { sql } from 'drizzle-orm';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from '../libs/ids/ids';
import { packageRoot } from '../src/common/package-root';
import { FixtureLoader } from '../src/fixtures/fixture-loader.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * A source's `config` is typed per source type: only the documented keys are
 * accepted (POST /sources and the fixture loader alike), every URL-valued key
 * passes the outbound-URL rule, nothing secret-shaped is stored; rows stored
 * before the rule are brought under it by a migration.
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
const url = 'https://help.example.com/';

/** What an outside probe stored as given, in clear, before the rule: each is now an unknown field. */
const HOSTILE_KEYS: Array<[string, unknown]> = [
  ['sitemap_url', 'http://169.254.169.254/'],
  ['start_urls', ['http://127.0.0.1/']],
  ['webhook_url', 'http://127.0.0.1:6379/'],
  ['proxy', 'http://user:pw@proxy.example.com:3128/'],
  ['auth', { password: 'pw-SECRET-config-1a2b3c' }],
  ['headers', { Authorization: 'Bearer tok-SECRET-config-4d5e6f' }],
  ['__proto__', { indexed: true }],
  ['constructor', { x: 1 }],
];

async function fixtureProblem(source: object): Promise<{ path: string; problem: string } | undefined> {
  const orgId = newId('org');
  try {
    await t.app.get(FixtureLoader).load({ orgs: [{ id: orgId, name: 'Config', slug: `config-${orgId.slice(-8)}`, sources: [source] }] });
    return undefined;
  } catch (error) {
    return error as { path: string; problem: string };
  }
}

describe('POST /sources: only the keys of the type', () => {
  it.each(HOSTILE_KEYS)('config.%s is an unknown field on website and webpage, and in the fixture loader', async (key, value) => {
    for (const type of ['website', 'webpage']) {
      const config = JSON.parse(`{"url":${JSON.stringify(url)},${JSON.stringify(key)}:${JSON.stringify(value)}}`);
      const res = await post({ type, name: 'X', config });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual([`config.${key}`]);
      expect(res.text).not.toMatch(/SECRET/);
      expect(await fixtureProblem({ type, name: 'X', config })).toMatchObject({ path: `orgs[0].sources[0].config.${key}` });
    }
  });

  it('max_pages and crawl are website keys, not webpage ones', async () => {
    const config = { url, indexed: true, max_pages: 500, crawl: { include: ['/docs/**'], exclude: ['/docs/archive/**'], max_depth: 3 } };
    expect((await post({ type: 'website', name: 'X', config })).status).toBe(201);
    const page = await post({ type: 'webpage', name: 'X', config });
    expect(page.status).toBe(422);
    expect(Object.keys(page.body.error.details.fields).sort()).toEqual(['config.crawl', 'config.max_pages']);
  });

  it.each([
    [{ max_pages: 0 }, 'config.max_pages'],
    [{ max_pages: 1.5 }, 'config.max_pages'],
    [{ max_pages: '10' }, 'config.max_pages'],
    [{ crawl: [] }, 'config.crawl'],
    [{ crawl: { include: '/docs' } }, 'config.crawl.include'],
    [{ crawl: { exclude: [''] } }, 'config.crawl.exclude'],
    [{ crawl: { exclude: [1] } }, 'config.crawl.exclude'],
    [{ crawl: { max_depth: -1 } }, 'config.crawl.max_depth'],
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
