import { fillPlaceholders } from 'drizzle-orm';
import { Client } from 'pg';
import { ConversationsRepository, PROBE_PAGES, Q_BUCKET_PROBE_ROWS, Q_BUCKET_ROWS, Q_BUCKET_TERM_SHARE, Q_DENSITY_ROWS, Q_FREQUENT_SHARE, Q_PROBE_ROWS, Q_TRIGRAM_MATCHES } from '../../src/conversations/conversations.repository';
import type { ConversationSource } from '../../src/conversations/conversations.dto';
import { DatabaseConnection } from '../../src/database/connection';
import { createOrg, type TestOrg } from '../support/factories';
import { backendPid, waitsOnLock } from '../support/pg-activity';
import { until } from '../support/until';
import { createTestApp, type TestApp } from '../support/test-app';

/**
 * `q` past the trigram step's bound, on PostgreSQL (the rows it takes are
 * too many for the embedded engine in a test): a term in more titles than the
 * trigram step reads, none of them among the newest rows the probe reads, is
 * found bucket by bucket of the ids, newest first, page after page.
 */
describe('conversations q: a frequent term away from the newest rows', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });
  const list = (org: TestOrg, query: string) => t.http.get(`/api/v1/conversations${query}`).set('Authorization', org.auth);
  const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((item) => item.id);
  /**
   * Inserts `total` rows for the organization in one statement, on a connection of its own (the app's pool has the
   * request statement timeout): the first `matching` titles hold `term`, the others do not; the i-th row's id and
   * times are at the second `seconds` gives (SQL of i; $1 is `start`, $3 `matching`, $6 on the `extra` values).
   * Analyzes, and returns the ids whose titles hold the term in the plain filter's order, the one every page must follow.
   */
  const seed = async (orgId: string, term: string, rows: { start: number; matching: number; total: number; seconds: string; extra?: unknown[] }): Promise<string[]> => {
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      await client.query(
        `insert into conversations (id, org_id, title, source, conversation_number, created_at, updated_at)
          select 'conv_' || lpad(to_hex(s), 8, '0') || lpad(to_hex(i), 16, '0'), $2,
            case when i < $3 then $5 || ' question ' else 'help with order ' end || i, 'dashboard', i + 1, to_timestamp(s), to_timestamp(s)
          from generate_series(0, $4::int - 1) i, lateral (select ${rows.seconds} as s) t`,
        [rows.start, orgId, rows.matching, rows.total, term, ...(rows.extra ?? [])],
      );
      await client.query('analyze conversations');
      const plain = await client.query<{ id: string }>(`select id from conversations where org_id = $1 and title ilike $2 order by id desc`, [orgId, `%${term}%`]);
      return plain.rows.map((row) => row.id);
    } finally {
      await client.end();
    }
  };
  /** Pages of `?q=term&limit=…` through the API, following next_cursor: the ids in order. */
  const pages = async (org: TestOrg, term: string, limit: number): Promise<string[]> => {
    let cursor: string | null = null;
    const seen: string[] = [];
    do {
      const res = await list(org, `?q=${term}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...ids(res));
      cursor = res.body.meta.next_cursor;
    } while (cursor);
    return seen;
  };
  /** Pages of `?q=term&limit=100` through the API, following next_cursor: the ids in order; the first page from the buckets. */
  const pagesFromBuckets = async (org: TestOrg, term: string): Promise<string[]> => {
    const buckets = jest.spyOn(t.app.get(ConversationsRepository), 'listByBuckets');
    buckets.mockClear();
    try {
      const seen = await pages(org, term, 100);
      // the first page came from the buckets (later ones may come from the probe: their cursor sits among the matches)
      expect(await buckets.mock.results[0].value).toHaveLength(101);
      return seen;
    } finally {
      buckets.mockRestore();
    }
  };
  /** Every match through the buckets at once, from the newest and from the cursors at these positions of `expected`. */
  const expectBucketsFrom = async (orgId: string, term: string, expected: string[], positions: number[]) => {
    const repository = t.app.get(ConversationsRepository);
    expect((await repository.listByBuckets(orgId, { q: term }, null, expected.length + 1))?.map((row) => row.id)).toEqual(expected);
    for (const at of positions) {
      expect((await repository.listByBuckets(orgId, { q: term }, expected[at], expected.length))?.map((row) => row.id)).toEqual(expected.slice(at + 1));
    }
  };

  it('finds the newest matches of a term with more matches than the trigram step reads, none among the newest rows', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-01-01T09:00:32Z');
    // the oldest Q_TRIGRAM_MATCHES + 10 titles say "gecko"; the newer ones (more than the probe reads) do not
    const matching = Q_TRIGRAM_MATCHES + 10;
    const total = matching + Q_PROBE_ROWS + 10;
    // one set-based insert: ids spelled as newId spells them (creation second, then 16 hex digits)
    // on a connection of its own: the app's pool has the request statement timeout
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      await client.query(
        `insert into conversations (id, org_id, title, source, conversation_number, created_at, updated_at)
          select 'conv_' || lpad(to_hex($1::bigint + i * 70), 8, '0') || lpad(to_hex(i), 16, '0'), $2,
            case when i < $3 then 'gecko question ' else 'help with order ' end || i, 'dashboard', i + 1,
            to_timestamp($1::bigint + i * 70), to_timestamp($1::bigint + i * 70)
          from generate_series(0, $4::int - 1) i`,
        [start / 1000, org.orgId, matching, total],
      );
      await client.query('analyze conversations');
    } finally {
      await client.end();
    }
    const newestMatches = Array.from({ length: matching }, (_, i) => `conv_${(start / 1000 + i * 70).toString(16).padStart(8, '0')}${i.toString(16).padStart(16, '0')}`).reverse();

    // the trigram statistics put the term in 29 % of this organization's titles (other test files share the
    // table: a share of all of them): the trigram step, which would read all its matches' posting lists, is
    // skipped; a term with a trigram the statistics do not list counts as rare, one with no trigram as unknown
    const repository = t.app.get(ConversationsRepository);
    expect(await repository.termShare('GECKO')).toBeGreaterThanOrEqual(Q_FREQUENT_SHARE);
    expect(await repository.termRoute({ q: 'GECKO' }, 26)).toMatchObject({ bucketsFirst: true, checkMetadata: false, termOnly: false });
    expect(await repository.termShare('unicorn')).toBe(0);
    expect(await repository.termShare('geckoz')).toBe(0);
    // no trigram: the statistics cannot tell
    expect(await repository.termShare('ge')).toBeNull();
    // a term's share is its rarest trigram's: "order" (5,010 rows) above "gecko" (2,010), and "gecko order", which
    // no title holds, at gecko's (a bound from above: the step it picks still reads the rows)
    expect(await repository.termShare('order')).toBeGreaterThan((await repository.termShare('gecko'))!);
    expect(await repository.termShare('gecko order')).toBe(await repository.termShare('gecko'));
    const buckets = jest.spyOn(repository, 'listByBuckets');
    const first = await list(org, '?q=gecko&limit=5');
    expect(ids(first)).toEqual(newestMatches.slice(0, 5));
    // answered by the buckets, not by the ordered walk
    expect(await buckets.mock.results[0].value).toHaveLength(6); // the page and one more (limit + 1 tells whether a next page exists)
    const next = await list(org, `?q=gecko&limit=5&cursor=${first.body.meta.next_cursor}`);
    expect(ids(next)).toEqual(newestMatches.slice(5, 10));
    // beside a filter that keeps every row, the same steps: the filter's newest rows span what the organization's do
    const common = jest.spyOn(repository, 'commonFilters');
    buckets.mockClear();
    const filtered = await list(org, '?q=gecko&source=dashboard&limit=3');
    expect(ids(filtered)).toEqual(newestMatches.slice(0, 3));
    expect(await common.mock.results[0].value).toBe(true);
    expect(await buckets.mock.results[0].value).toHaveLength(4);
    const filteredNext = await list(org, `?q=gecko&source=dashboard&limit=3&cursor=${filtered.body.meta.next_cursor}`);
    expect(ids(filteredNext)).toEqual(newestMatches.slice(3, 6));
    // beside a value no row has (or one with fewer rows than the probe reads) the trigram step answers, not the buckets
    for (const query of ['source=embed', 'agent_id=agent_5ca1e2ffffffffffffffffff', 'model=o1']) {
      common.mockClear();
      buckets.mockClear();
      expect(ids(await list(org, `?q=gecko&${query}&limit=3`))).toEqual([]);
      expect(await common.mock.results[0].value).toBe(false);
      expect(buckets).not.toHaveBeenCalled();
    }
    // a filter the buckets do not take (metadata) is not measured: the trigram step
    common.mockClear();
    expect(ids(await list(org, '?q=gecko&metadata[channel]=email&limit=3'))).toEqual([]);
    expect(common).not.toHaveBeenCalled();
    // one row every 70 seconds: the matches span three of the index's 2^16-second id buckets, the newest 152
    // of them in the newest; pages of 100 across that boundary are the plain query's
    let cursor: string | null = null;
    const seen: string[] = [];
    for (let page = 0; page < 4; page += 1) {
      const res = await list(org, `?q=GECKO&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...ids(res));
      cursor = res.body.meta.next_cursor;
    }
    expect(seen).toEqual(newestMatches.slice(0, 400));
  });
  it('routes a term by its share: no probe and the trigram index alone below Q_BUCKET_TERM_SHARE, the buckets first from it and the probe beside them only where PROBE_PAGES pages are promised within Q_BUCKET_PROBE_ROWS rows, a metadata value by its index from Q_FREQUENT_SHARE', async () => {
    const repository = t.app.get(ConversationsRepository);
    const share = jest.spyOn(repository, 'termShare');
    try {
      // a page of 25 and the row that tells whether there is a next page (fetch 26): PROBE_PAGES pages in at most
      // Q_BUCKET_PROBE_ROWS probed rows from this share on
      const probed = (PROBE_PAGES * 26) / Q_BUCKET_PROBE_ROWS;
      const cases: Array<[number | null, number, boolean, boolean, boolean]> = [
        [0, 0, false, true, true],
        [Q_BUCKET_TERM_SHARE * 0.99, 0, false, true, true],
        // spread evenly, 1.5 matches in the probed rows: the buckets without the probe
        [Q_BUCKET_TERM_SHARE, 0, true, true, false],
        [Q_FREQUENT_SHARE, 0, true, false, false],
        // PROBE_PAGES pages promised in more rows than Q_BUCKET_PROBE_ROWS: none; in fewer: those rows
        [probed / 1.01, 0, true, false, false],
        [probed, Q_BUCKET_PROBE_ROWS, true, false, false],
        [0.5, Math.ceil((PROBE_PAGES * 26) / 0.5), true, false, false],
        // unknown (no trigram, no statistics): the probe first, then the trigram step as for a rare term
        [null, Q_PROBE_ROWS, false, true, true],
      ];
      for (const [value, probeRows, bucketsFirst, checkMetadata, termOnly] of cases) {
        share.mockResolvedValueOnce(value);
        expect(await repository.termRoute({ q: 'x', source: 'dashboard' }, 26)).toEqual({ probeRows, bucketsFirst, checkMetadata, termOnly });
      }
      // a larger page needs more matches from the probe
      share.mockResolvedValueOnce(probed);
      expect(await repository.termRoute({ q: 'x', source: 'dashboard' }, 101)).toMatchObject({ probeRows: 0, bucketsFirst: true });
      share.mockResolvedValueOnce(0.9);
      expect(await repository.termRoute({ q: 'x', source: 'dashboard' }, 101)).toMatchObject({ probeRows: Math.ceil((PROBE_PAGES * 101) / 0.9) });
      // beside a filter the buckets do not take, the trigram step whatever the share, after the whole probe
      share.mockResolvedValueOnce(0.5);
      expect(await repository.termRoute({ q: 'x', metadata: { channel: 'email' } }, 26)).toEqual({ probeRows: Q_PROBE_ROWS, bucketsFirst: false, checkMetadata: false, termOnly: false });
      // without `q`, or beside a `*_before` bound (the split query answers it), no route and the share is not read
      share.mockClear();
      expect(await repository.termRoute({ source: 'dashboard' }, 26)).toBeNull();
      expect(await repository.termRoute({ q: 'x', createdBefore: '2026-01-01T00:00:00Z' }, 26)).toBeNull();
      expect(await repository.termRoute({ q: 'x', lastMessageBefore: '2026-01-01T00:00:00Z' }, 26)).toBeNull();
      expect(share).not.toHaveBeenCalled();
    } finally {
      share.mockRestore();
    }
  });
  it('measures how common the filters beside a frequent term are from their newest rows against the organization\'s', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-02-01T00:00:00Z') / 1000;
    // one row every 70 s: every 8th "autonomous" (12.5 %), every 12th (odd ones) "embed" (8.3 %, exactly
    // Q_DENSITY_ROWS of them), the rest "dashboard"
    const total = 12 * Q_DENSITY_ROWS;
    expect(total).toBeGreaterThan(Q_PROBE_ROWS);
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      await client.query(
        `insert into conversations (id, org_id, title, source, conversation_number, created_at, updated_at)
          select 'conv_' || lpad(to_hex($1::bigint + i * 70), 8, '0') || lpad(to_hex(i), 16, '0'), $2, 'gecko question ' || i,
            case when i % 8 = 0 then 'autonomous' when i % 12 = 1 then 'embed' else 'dashboard' end, i + 1,
            to_timestamp($1::bigint + i * 70), to_timestamp($1::bigint + i * 70)
          from generate_series(0, $3::int - 1) i`,
        [start, org.orgId, total],
      );
    } finally {
      await client.end();
    }
    const repository = t.app.get(ConversationsRepository);
    const [scope] = await repository.bucketScope.execute({ orgId: org.orgId, q: 'gecko' });
    const common = (source: ConversationSource) => repository.commonFilters(org.orgId, { q: 'gecko', source }, null, scope);
    expect(await common('autonomous')).toBe(true);
    expect(await common('dashboard')).toBe(true);
    expect(await common('embed')).toBe(false);
    expect(await common('sub-agent')).toBe(false);
  });
  it('reads a rare term from its own index alone, whatever the planner thinks of the other filters', async () => {
    const org = await createOrg(t.app);
    const repository = t.app.get(ConversationsRepository);
    const rare = await repository.termShare('wombatz');
    expect(rare).toBeLessThan(Q_BUCKET_TERM_SHARE);
    const route = await repository.termRoute({ q: 'wombatz', agentId: 'agent_5ca1e2000000000000000ccc' }, 26);
    expect(route).toMatchObject({ probeRows: 0, termOnly: true });
    // the statement: no index condition on the agent, which is checked on the rows the term's index (or the
    // organization's) returns, whatever its statistics say (at 10 M an agent estimated at 926 rows had 15,355)
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    const plan = async (termOnly: boolean) => {
      const step = repository.qTrigram(org.orgId, { q: 'wombatz', agentId: 'agent_5ca1e2000000000000000ccc' }, null, 26, { checkMetadata: true, termOnly })!;
      const built = step.build(t.app.get(DatabaseConnection).db).toSQL();
      await client.query('begin');
      try {
        await client.query('set local enable_seqscan = off; set local enable_indexscan = off; set local enable_indexonlyscan = off');
        const res = await client.query<{ 'QUERY PLAN': string }>(`explain ${built.sql}`, fillPlaceholders(built.params, step.values));
        return res.rows.map((row) => row['QUERY PLAN']);
      } finally {
        await client.query('rollback');
      }
    };
    try {
      const rare = await plan(true);
      expect(rare.filter((line) => line.includes('Index Cond') && line.includes('agent_id'))).toEqual([]);
      expect(rare.some((line) => line.includes('Filter') && line.includes("(agent_id = 'agent_5ca1e2000000000000000ccc'::text) IS TRUE"))).toBe(true);
      // the same step for a term that is not rare leaves the agent to the planner
      expect((await plan(false)).some((line) => line.includes('IS TRUE'))).toBe(false);
    } finally {
      await client.end();
    }
  });
  it('reads a term the statistics call rare without the probe, page after page like the plain filter', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-08-01T00:00:00Z') / 1000;
    // 60 of 6,000 titles hold the term, one every 100 rows: the newest Q_PROBE_ROWS rows hold 50 of them
    const total = 6_000;
    expect(total).toBeGreaterThan(Q_PROBE_ROWS);
    await seed(org.orgId, 'xenops', { start, matching: total, total, seconds: '$1::bigint + i * 10' });
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    let expected: string[];
    try {
      await client.query(`update conversations set title = 'help with order ' || conversation_number where org_id = $1 and conversation_number % 100 <> 0`, [org.orgId]);
      expected = (await client.query<{ id: string }>(`select id from conversations where org_id = $1 and title ilike '%xenops%' order by id desc`, [org.orgId])).rows.map((row) => row.id);
    } finally {
      await client.end();
    }
    expect(expected).toHaveLength(60);
    const repository = t.app.get(ConversationsRepository);
    const share = jest.spyOn(repository, 'termShare');
    const probe = jest.spyOn(repository, 'probe');
    try {
      // the statistics' verdict, whatever this run's table holds: rare, then unknown
      share.mockResolvedValue(0);
      expect(await pages(org, 'xenops', 25)).toEqual(expected);
      expect(probe).not.toHaveBeenCalled();
      share.mockResolvedValue(null);
      expect(await pages(org, 'xenops', 25)).toEqual(expected);
      expect(probe).toHaveBeenCalled();
    } finally {
      share.mockRestore();
      probe.mockRestore();
    }
  });
  it('reads a term whose share cannot fill the page from the probed rows from the buckets, even bunched among the newest rows, and probes fewer rows for one that fills it sooner', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-09-01T00:00:00Z') / 1000;
    // the newest 200 of 6,000 titles hold the term: the probe would have found the first page among them
    const total = 6_000;
    await seed(org.orgId, 'xerus', { start, matching: 0, total, seconds: '$1::bigint + i * 10' });
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    let expected: string[];
    try {
      await client.query(`update conversations set title = 'xerus question ' || conversation_number where org_id = $1 and conversation_number > $2`, [org.orgId, total - 200]);
      expected = (await client.query<{ id: string }>(`select id from conversations where org_id = $1 and title ilike '%xerus%' order by id desc`, [org.orgId])).rows.map((row) => row.id);
    } finally {
      await client.end();
    }
    expect(expected).toHaveLength(200);
    const repository = t.app.get(ConversationsRepository);
    // the statistics' verdict: frequent enough for the buckets, 1.5 matches in the probed rows if spread evenly
    const share = jest.spyOn(repository, 'termShare').mockResolvedValue(Q_BUCKET_TERM_SHARE);
    const probe = jest.spyOn(repository, 'probe');
    const buckets = jest.spyOn(repository, 'listByBuckets');
    // an earlier test's spy on the same method may still hold its calls
    probe.mockClear();
    buckets.mockClear();
    try {
      expect(await pages(org, 'xerus', 25)).toEqual(expected);
      expect(probe).not.toHaveBeenCalled();
      expect(await buckets.mock.results[0].value).toHaveLength(26);
      // a share that promises PROBE_PAGES pages from fewer rows: a short probe, the same pages
      share.mockResolvedValue(0.5);
      expect(await pages(org, 'xerus', 25)).toEqual(expected);
      expect(probe.mock.calls.map((call) => call[4])).toContain(Math.ceil((PROBE_PAGES * 26) / 0.5));
    } finally {
      share.mockRestore();
      probe.mockRestore();
      buckets.mockRestore();
    }
  });
  it('skips the spans of 16 buckets without the term and pages like the plain filter across them', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-03-01T00:00:00Z') / 1000;
    // the oldest Q_TRIGRAM_MATCHES + 10 titles say "tapir", one every 2,000 s: 61 of the 2^16-second buckets, in
    // every position of four 2^20-second spans; the newer ones (more than the probe reads), one every 1,000 s,
    // do not: five spans without the term above them
    const matching = Q_TRIGRAM_MATCHES + 10;
    const total = matching + Q_PROBE_ROWS + 10;
    const expected = await seed(org.orgId, 'tapir', {
      start,
      matching,
      total,
      seconds: '$1::bigint + least(i, $3) * 2000 + greatest(i - $3, 0) * 1000',
    });
    expect(expected).toHaveLength(matching);
    expect(await pagesFromBuckets(org, 'tapir')).toEqual(expected);
    // from a cursor inside a span of the term
    await expectBucketsFrom(org.orgId, 'tapir', expected, [700]);
  });
  it('reads an organization with many rows per bucket slice by slice, and pages like the plain filter', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-04-01T00:00:00Z') / 1000;
    // "okapi": 2,000 titles one every 600 s (20 days: two spans, a slice of 4,096 s holds 6 or 7), then 1,000 one every
    // 2 s (a bunch across a slice's edge); the newer 5,010, one every 10 s (a bucket of this organization holds
    // thousands of rows: no organization key, the slices), do not say it
    const spread = 2_000;
    const matching = spread + 1_000;
    const total = matching + Q_PROBE_ROWS + 10;
    const expected = await seed(org.orgId, 'okapi', {
      start,
      matching,
      total,
      seconds: '$1::bigint + least(i, $6) * 600 + greatest(least(i, $3) - $6, 0) * 2 + greatest(i - $3, 0) * 10',
      extra: [spread],
    });
    expect(expected).toHaveLength(matching);
    const repository = t.app.get(ConversationsRepository);
    const [scope] = await repository.bucketScope.execute({ orgId: org.orgId, q: 'okapi' });
    expect(repository.qBuckets(org.orgId, { q: 'okapi' }, null, 26, scope)?.shape).toMatch(/,no-org-key$/);
    expect(await pagesFromBuckets(org, 'okapi')).toEqual(expected);
    // from inside the bunch, at its edges, and from inside the spread part
    await expectBucketsFrom(org.orgId, 'okapi', expected, [500, 999, 1_000, 2_500]);
  });
  it('keeps the spans\' trigrams on every insert and title change, which the slices\' walk reads', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-05-01T00:00:00Z') / 1000;
    // one row every 10 s (many rows per bucket: the walk reads the spans from conversation_title_spans), none
    // saying the term; then the 100th is renamed to say it, in a span of its own the term was never in
    const total = Q_PROBE_ROWS + 1_000;
    await seed(org.orgId, 'quagga', { start, matching: 0, total, seconds: '$1::bigint + i * 10' });
    const renamed = `conv_${(start + 100 * 10).toString(16).padStart(8, '0')}${(100).toString(16).padStart(16, '0')}`;
    const repository = t.app.get(ConversationsRepository);
    const walk = async () => (await repository.listByBuckets(org.orgId, { q: 'quagga' }, null, 26))?.map((row) => row.id);
    expect(await walk()).toEqual([]);
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      const pairs = () =>
        client.query<{ trigram: string }>(`select distinct trigram from conversation_title_spans where span = $1 and trigram in ('qua', 'uag', 'agg', 'gga') order by 1`, [renamed.slice(5, 8)]);
      expect((await pairs()).rows).toEqual([]);
      // the inserts added their titles' pairs once each, not once per row
      const once = await client.query<{ n: number }>(`select count(*)::int as n from conversation_title_spans where span = $1 and trigram = 'hel'`, [renamed.slice(5, 8)]);
      expect(once.rows[0].n).toBe(1);
      await client.query(`update conversations set title = 'quagga question' where id = $1`, [renamed]);
      expect((await pairs()).rows.map((row) => row.trigram)).toEqual(['agg', 'gga', 'qua', 'uag']);
    } finally {
      await client.end();
    }
    const [scope] = await repository.bucketScope.execute({ orgId: org.orgId, q: 'quagga' });
    expect(repository.qBuckets(org.orgId, { q: 'quagga' }, null, 26, scope)?.shape).toMatch(/,no-org-key$/);
    expect(await walk()).toEqual([renamed]);
  });
  it('lets two writers add the same new span and trigram without waiting on each other', async () => {
    const org = await createOrg(t.app);
    const second = Date.parse('2025-07-01T00:00:00Z') / 1000;
    const id = (i: number) => `conv_${second.toString(16).padStart(8, '0')}${(0xe0 + i).toString(16).padStart(16, '0')}`;
    const insert = (client: Client, i: number) =>
      client.query(
        `insert into conversations (id, org_id, title, source, conversation_number, created_at, updated_at)
          values ($1, $2, 'zebu ' || $3::text, 'dashboard', $3::int, to_timestamp($4), to_timestamp($4))`,
        [id(i), org.orgId, i, second],
      );
    const first = new Client({ connectionString: process.env.DATABASE_URL });
    const other = new Client({ connectionString: process.env.DATABASE_URL });
    await first.connect();
    await other.connect();
    try {
      // the first writer's pairs are not committed yet when the second adds the same ones
      await first.query('begin');
      await insert(first, 1);
      const pid = await backendPid(other);
      let done = false;
      const late = insert(other, 2).then(() => (done = true));
      // the second insert ends on its own (it would wait for the first's commit behind a unique key)
      await until(async () => done || (await waitsOnLock(first, pid)));
      expect(done).toBe(true);
      await late;
      await first.query('commit');
      const pairs = await other.query<{ n: number }>(`select count(*)::int as n from conversation_title_spans where trigram = 'zeb' and span = $1`, [id(1).slice(5, 8)]);
      expect(pairs.rows[0].n).toBeGreaterThanOrEqual(1);
    } finally {
      await first.end();
      await other.end();
    }
  });
  it('leaves a common filter that never meets a frequent term to the trigram step once the buckets read their row bound', async () => {
    const org = await createOrg(t.app);
    const start = Date.parse('2025-06-01T00:00:00Z');
    const agent = 'agent_5ca1e2000000000000000aaa';
    const other = 'agent_5ca1e2000000000000000bbb';
    // the oldest rows say "dingo" (more than the buckets read), the agent's only on the oldest three;
    // the newer ones do not, every other one the agent's: a common value with more rows than the probe reads
    const matching = Q_BUCKET_ROWS + 1_000;
    const total = matching + 2 * Q_PROBE_ROWS + 10;
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      await client.query(
        `insert into conversations (id, org_id, title, source, agent_id, metadata, conversation_number, created_at, updated_at)
          select 'conv_' || lpad(to_hex($1::bigint + i * 10), 8, '0') || lpad(to_hex(i), 16, '0'), $2,
            case when i < $3 then 'dingo question ' else 'help with order ' end || i, 'dashboard',
            case when i < 3 or (i >= $3 and i % 2 = 0) then $5 else $6 end,
            case when i in (5, 6, $3 + 1) then '{"channel": "fax"}'::jsonb end, i + 1,
            to_timestamp($1::bigint + i * 10), to_timestamp($1::bigint + i * 10)
          from generate_series(0, $4::int - 1) i`,
        [start / 1000, org.orgId, matching, total, agent, other],
      );
      await client.query('analyze conversations');
    } finally {
      await client.end();
    }
    const id = (i: number) => `conv_${(start / 1000 + i * 10).toString(16).padStart(8, '0')}${i.toString(16).padStart(16, '0')}`;
    const repository = t.app.get(ConversationsRepository);
    expect(await repository.termShare('dingo')).toBeGreaterThanOrEqual(Q_FREQUENT_SHARE);
    const common = jest.spyOn(repository, 'commonFilters');
    const buckets = jest.spyOn(repository, 'listByBuckets');
    // the spies of the test before, if any, are these ones
    common.mockClear();
    buckets.mockClear();
    try {
      const res = await list(org, `?q=dingo&agent_id=${agent}&limit=5`);
      expect(res.status).toBe(200);
      // the plain filter's rows: the agent's three oldest
      expect(ids(res)).toEqual([id(2), id(1), id(0)]);
      expect(res.body.meta.next_cursor).toBeNull();
      // the agent is common, so the buckets went first, and stopped at their bound without a page
      expect(await common.mock.results[0].value).toBe(true);
      expect(await buckets.mock.results[0].value).toBeNull();
      // a frequent term beside a rare metadata value: the trigram step's bitmap may read the metadata index
      const trigram = jest.spyOn(repository, 'qTrigram');
      expect(ids(await list(org, '?q=dingo&metadata[channel]=fax&limit=5'))).toEqual([id(6), id(5)]);
      expect(trigram.mock.calls.map((call) => call[4]?.checkMetadata)).toEqual([false]);
      trigram.mockRestore();
      // the other agent, whose rows hold the term: its newest matches
      buckets.mockClear();
      const filled = await list(org, `?q=dingo&agent_id=${other}&limit=3`);
      expect(ids(filled)).toEqual([id(matching - 1), id(matching - 2), id(matching - 3)]);
    } finally {
      common.mockRestore();
      buckets.mockRestore();
    }
  });
});
