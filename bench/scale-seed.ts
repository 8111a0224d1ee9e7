/**
 * The scale dataset, written by set-based SQL (`INSERT … SELECT generate_series`),
 * never row by row. The conversation and message indexes are dropped while the
 * rows go in and built again afterwards (one sort per index instead of
 * millions of index insertions), from the definitions the migrations made.
 *
 * Shape, for a size N (the big organization's conversations):
 * - one big organization: N conversations over two years, 200 agents with a
 *   power-law share (the busiest about 27 %), sources dashboard 51 % /
 *   autonomous 25 % / embed 20 % / sub-agent children 4 %, models
 *   gpt-4o-mini 55 % / gpt-4o 30 % / claude-sonnet-4 15 % / o1-rare 0.01 %
 *   (embed always gpt-4o-mini: `source=embed&model=gpt-4o` matches nothing),
 *   5 % with metadata (`channel`, `ticketId`), 10 % with ticket ids, titles of
 *   words where `help` is in 50 % and `quokka` in 0.001 %, plus SEARCH_TERMS
 *   (one title, 0.01 % to 50 %, spread or bunched in one period); flags
 *   correlated with rare agents and the rare model: simulations 15 % of the
 *   conversations of the 100 rarer agents and of `o1-rare`, 1 % elsewhere (about
 *   3 % in all), onboarding 8 % / 0.4 % (about 1.6 %);
 * - 999 small organizations of 1,000–10,000 conversations each at N = 10 M,
 *   scaled by N / 10 M below that (so 1 M seeds 100–1,000 each);
 * - one conversation of the big organization with 20,000 messages;
 * - 10,000 agents in the trash for 40 days, each with a trigger and a chatbot;
 * - 1,000,000 expired idempotency records.
 */
import type { Pool } from 'pg';

export const BIG_ORG = 'org_5ca1e0000000000000000001';
const SMALL_ORGS = 999;
const BIG_AGENTS = 200;
const THREAD_MESSAGES = 20_000;
const TRASHED_AGENTS = 10_000;
const EXPIRED_IDEMPOTENCY = 1_000_000;
export const RARE_WORD = 'quokka';
export const COMMON_WORD = 'help';

/**
 * Title words at every frequency, for `q`: each in the share of the big
 * organization's titles given, spread over the whole history (`spread`, an
 * independent draw per row) or bunched in one period (`from`: that fraction of
 * the history back from its start, for `share` of it).
 */
export const SEARCH_TERMS: Array<{ word: string; share: number; from?: number }> = [
  { word: 'unicorn', share: 0 }, // exactly one title
  { word: 'ibis', share: 0.0001 },
  { word: 'marmot', share: 0.001 },
  { word: 'pelican', share: 0.01 },
  { word: 'walrus', share: 0.05 },
  { word: 'tapir', share: 0.001, from: 0.6 },
  { word: 'narwhal', share: 0.01, from: 0.2 },
  { word: 'dugong', share: 0.05, from: 0.3 },
  { word: 'gecko', share: 0.5, from: 0.1 },
];

/** The SQL text that appends the search terms to the i-th title of N (the spread ones share one draw, `r.term`). */
function searchTermsSql(n: number): string {
  let cumulative = 0;
  const spread = SEARCH_TERMS.filter((t) => t.from === undefined && t.share > 0).map((t) => `when r.term < ${(cumulative += t.share)} then ' ${t.word}'`);
  const bunched = SEARCH_TERMS.filter((t) => t.from !== undefined).map(
    (t) => `case when i >= ${Math.floor(t.from! * n)} and i < ${Math.floor((t.from! + t.share) * n)} then ' ${t.word}' else '' end`,
  );
  return [`case ${spread.join(' ')} else '' end`, ...bunched, `case when i = ${Math.floor(n / 3)} then ' unicorn' else '' end`].join(' || ');
}

export const smallOrgId = (k: number) => `org_5ca1e1${k.toString(16).padStart(18, '0')}`;
export const bigAgentId = (a: number) => `agent_5ca1e2${a.toString(16).padStart(18, '0')}`;
/** the id of the big organization's i-th conversation, as the SQL below spells it */
const BIG_CONV_ID_SQL = (i: string, epoch: string) => `'conv_' || lpad(to_hex(floor(${epoch})::bigint), 8, '0') || lpad(to_hex(${i}), 16, '0')`;

const WORDS = [
  'refund', 'order', 'login', 'invoice', 'shipping', 'password', 'export', 'upgrade', 'webhook', 'billing',
  'account', 'delivery', 'coupon', 'report', 'calendar', 'sync', 'import', 'language', 'mobile', 'printer',
  'return', 'size', 'stock', 'tracking', 'warranty', 'address', 'payment', 'plan', 'trial', 'team',
];
const words = `array[${WORDS.map((w) => `'${w}'`).join(',')}]`;
const TWO_YEARS_S = 730 * 86_400;

const org = (id: string, name: string) =>
  `('${id}', '${name}', '${id.replace('_', '-')}', 'pro', 'active', '{"total":0,"used":0,"remaining":0,"top_up":0,"reset_at":null}', ` +
  `'{"agents":null,"connectors":null,"sources":null,"chatbots":null,"scheduled_triggers":null,"custom_tool_slots":null}')`;

interface SeedReport {
  reused: boolean;
  seconds: Record<string, number>;
  bigConversations: number;
  smallConversations: number;
}

/** Seeds the dataset unless the big organization already exists (then the database is reused as it is). */
export async function seedScale(pool: Pool, n: number, log: (line: string) => void): Promise<SeedReport> {
  const seconds: Record<string, number> = {};
  const exists = await pool.query(`select count(*)::int as n from conversations where org_id = $1`, [BIG_ORG]);
  const marker = await pool.query(`select to_regclass('bench_scale_seed') is not null as done`);
  if (exists.rows[0].n > 0 && !marker.rows[0].done) throw new Error('this database holds a seed that did not finish: use a new database');
  if (exists.rows[0].n > 0) {
    const small = await pool.query(`select count(*)::int as n from conversations where org_id <> $1`, [BIG_ORG]);
    return { reused: true, seconds, bigConversations: exists.rows[0].n, smallConversations: small.rows[0].n };
  }
  const client = await pool.connect();
  const step = async (name: string, text: string) => {
    const started = performance.now();
    await client.query(text);
    seconds[name] = (performance.now() - started) / 1000;
    log(`  ${name}: ${seconds[name].toFixed(1)} s`);
  };
  const factor = n / 10_000_000;
  try {
    await client.query(`set statement_timeout = 0; set maintenance_work_mem = '512MB'; set max_parallel_maintenance_workers = 2; set synchronous_commit = off`);
    await client.query(`select setseed(0.18)`);
    const indexes = await client.query<{ indexname: string; indexdef: string }>(
      `select indexname, indexdef from pg_indexes where schemaname = 'public' and tablename in ('conversations', 'messages', 'idempotency_records')
         and indexname not in (select conname from pg_constraint where contype in ('p', 'u'))`,
    );
    await step('drop indexes', indexes.rows.map((row) => `drop index "${row.indexname}";`).join('\n'));

    await step('orgs', `insert into orgs (id, name, slug, plan, status, credits, limits) values ${org(BIG_ORG, 'Scale big org')};
      insert into orgs (id, name, slug, plan, status, credits, limits)
        select 'org_5ca1e1' || lpad(to_hex(k), 18, '0'), 'Small org ' || k, 'org-5ca1e1' || lpad(to_hex(k), 18, '0'), 'pro', 'active',
          '{"total":0,"used":0,"remaining":0,"top_up":0,"reset_at":null}',
          '{"agents":null,"connectors":null,"sources":null,"chatbots":null,"scheduled_triggers":null,"custom_tool_slots":null}'
        from generate_series(1, ${SMALL_ORGS}) k`);

    await step('agents', `insert into agents (id, org_id, handle, name, model)
        select 'agent_5ca1e2' || lpad(to_hex(a), 18, '0'), '${BIG_ORG}', 'agent' || a, 'Agent ' || a, 'gpt-4o-mini' from generate_series(0, ${BIG_AGENTS - 1}) a;
      insert into agents (id, org_id, handle, name, model)
        select 'agent_5ca1e3' || lpad(to_hex(k * 5 + a), 18, '0'), 'org_5ca1e1' || lpad(to_hex(k), 18, '0'), 'agent' || a, 'Agent ' || a, 'gpt-4o'
        from generate_series(1, ${SMALL_ORGS}) k, generate_series(0, 4) a`);

    // the big organization: i-th row created at start + i * step, its id's seconds from created_at
    await step(`big org: ${n} conversations`, `insert into conversations (id, org_id, title, source, agent_id, model, autonomous, is_onboarding, is_simulation,
        conversation_number, parent_conversation_id, credits_used, metadata, ticket_ids, message_count, last_message_at, created_at, updated_at)
      select ${BIG_CONV_ID_SQL('i', 'extract(epoch from created)')}, '${BIG_ORG}',
        case when r.title < 0.5 then '${COMMON_WORD} with ' else 'question on ' end || (${words})[1 + floor(r.w1 * ${WORDS.length})::int] || ' '
          || (${words})[1 + floor(r.w2 * ${WORDS.length})::int] || case when r.rare < 0.00001 then ' ${RARE_WORD}' else '' end
          || ${searchTermsSql(n)},
        s.source, 'agent_5ca1e2' || lpad(to_hex(m.agent), 18, '0'), m.model,
        s.source = 'autonomous', i = 0 or r.onboarding < case when m.agent >= ${BIG_AGENTS / 2} then 0.08 else 0.004 end,
        r.flag < case when m.agent >= ${BIG_AGENTS / 2} or m.model = 'o1-rare' then 0.15 else 0.01 end,
        case when s.source = 'sub-agent' then null else i + 1 end,
        case when s.source = 'sub-agent' then ${BIG_CONV_ID_SQL('p.j', `${`extract(epoch from now())`} - ${TWO_YEARS_S} + p.j * ${TWO_YEARS_S}.0 / ${n}`)} end,
        floor(r.count * 20)::int,
        case when r.meta < 0.05 then jsonb_build_object('channel', (array['email', 'web', 'chat'])[1 + floor(r.w1 * 3)::int], 'ticketId', 100000 + i) end,
        case when r.meta < 0.10 then array[(100000 + i)::text] else '{}'::text[] end,
        2 + floor(r.count * 10)::int, created + interval '1 minute' * (1 + r.count * 100), created, created
      from generate_series(0, ${n - 1}) i
      cross join lateral (select to_timestamp(extract(epoch from now()) - ${TWO_YEARS_S} + i * ${TWO_YEARS_S}.0 / ${n}) as created) t
      cross join lateral (select random() + 0 * i as agent, random() + 0 * i as src, random() + 0 * i as model, random() + 0 * i as meta,
        random() + 0 * i as title, random() + 0 * i as w1, random() + 0 * i as w2, random() + 0 * i as rare, random() + 0 * i as flag,
        random() + 0 * i as count, random() + 0 * i as onboarding, random() + 0 * i as term) r
      cross join lateral (select case when r.src < 0.04 and i > 1000 then 'sub-agent' when r.src < 0.29 then 'autonomous'
        when r.src < 0.49 then 'embed' else 'dashboard' end as source) s
      cross join lateral (select floor(${BIG_AGENTS} * power(r.agent, 4))::int as agent,
        case when s.source = 'embed' then 'gpt-4o-mini' when r.model < 0.55 then 'gpt-4o-mini' when r.model < 0.85 then 'gpt-4o'
             when r.model < 0.9999 then 'claude-sonnet-4' else 'o1-rare' end as model) m
      cross join lateral (select i - 1 - floor(r.w2 * 1000)::int as j) p`);

    // small organizations: sizes 1,000–10,000 at 10 M, scaled by the size below it; ids after every big-org id
    await step('small orgs', `insert into conversations (id, org_id, title, source, agent_id, model, autonomous, is_simulation,
        conversation_number, credits_used, metadata, ticket_ids, message_count, last_message_at, created_at, updated_at)
      select 'conv_' || lpad(to_hex(floor(extract(epoch from created))::bigint), 8, '0') || lpad(to_hex(1000000000000 + k * 1000000 + j), 16, '0'),
        'org_5ca1e1' || lpad(to_hex(k), 18, '0'),
        case when r.title < 0.8 then '${COMMON_WORD} with ' else 'question on ' end || (${words})[1 + floor(r.w1 * ${WORDS.length})::int],
        case when r.src < 0.3 then 'autonomous' when r.src < 0.5 then 'embed' else 'dashboard' end,
        'agent_5ca1e3' || lpad(to_hex(k * 5 + floor(r.agent * 5)::int), 18, '0'),
        case when r.model < 0.6 then 'gpt-4o-mini' else 'gpt-4o' end, r.src < 0.3, false, j + 1, 1,
        case when r.meta < 0.05 then jsonb_build_object('channel', (array['email', 'web', 'chat'])[1 + floor(r.w1 * 3)::int]) end,
        case when r.meta < 0.10 then array[(200000 + j)::text] else '{}'::text[] end,
        4, created + interval '5 minutes', created, created
      from (select k, greatest(10, floor((1000 + random() * 9000) * ${factor}))::int as size from generate_series(1, ${SMALL_ORGS}) k) o
      cross join lateral generate_series(0, o.size - 1) j
      cross join lateral (select to_timestamp(extract(epoch from now()) - ${TWO_YEARS_S} + j * ${TWO_YEARS_S}.0 / o.size) as created) t
      cross join lateral (select random() + 0 * j as agent, random() + 0 * j as src, random() + 0 * j as model, random() + 0 * j as meta,
        random() + 0 * j as title, random() + 0 * j as w1) r`);

    // the long thread: the newest top-level conversation of the big organization
    await step(`${THREAD_MESSAGES} messages`, `insert into messages (id, org_id, conversation_id, role, content, created_at)
      select 'msg_' || lpad(to_hex(floor(extract(epoch from c.created_at))::bigint + m / 100), 8, '0') || lpad(to_hex(m), 16, '0'), c.org_id, c.id,
        case when m % 2 = 0 then 'user' else 'assistant' end, 'message ' || m || ' of the long thread', c.created_at + interval '1 second' * (m / 100)
      from (select id, org_id, created_at from conversations where org_id = '${BIG_ORG}' and source <> 'sub-agent' order by id desc limit 1) c,
        generate_series(0, ${THREAD_MESSAGES - 1}) m`);

    for (const [name, text] of jobRowStatements()) await step(name, text);

    await step('build indexes', indexes.rows.map((row) => `${row.indexdef};`).join('\n'));
    const vacuumStarted = performance.now();
    for (const table of ['conversations', 'messages', 'agents', 'triggers', 'chatbots', 'idempotency_records', 'orgs']) await client.query(`vacuum (analyze) ${table}`);
    seconds['vacuum analyze'] = (performance.now() - vacuumStarted) / 1000;
    log(`  vacuum analyze: ${seconds['vacuum analyze'].toFixed(1)} s`);
    await client.query(`create table bench_scale_seed as select ${n}::bigint as size, now() as seeded_at`);
  } finally {
    client.release();
  }
  const big = await pool.query(`select count(*)::int as n from conversations where org_id = $1`, [BIG_ORG]);
  const small = await pool.query(`select count(*)::int as n from conversations where org_id <> $1`, [BIG_ORG]);
  return { reused: false, seconds, bigConversations: big.rows[0].n, smallConversations: small.rows[0].n };
}

/** The rows the purge jobs remove: 10,000 agents in the trash for 40 days (with a trigger and a chatbot each), 1,000,000 expired idempotency records. */
function jobRowStatements(): Array<[string, string]> {
  return [
    [`${TRASHED_AGENTS} trashed agents + triggers + chatbots`, `insert into agents (id, org_id, handle, name, deleted_at)
        select 'agent_5ca1e4' || lpad(to_hex(t), 18, '0'), 'org_5ca1e1' || lpad(to_hex(1 + t % ${SMALL_ORGS}), 18, '0'), 'trashed' || t, 'Trashed ' || t,
          now() - interval '40 days' - interval '1 second' * t
        from generate_series(1, ${TRASHED_AGENTS}) t;
      insert into triggers (id, org_id, agent_id, connector_type, event)
        select 'trigger_5ca1e4' || lpad(to_hex(t), 18, '0'), 'org_5ca1e1' || lpad(to_hex(1 + t % ${SMALL_ORGS}), 18, '0'), 'agent_5ca1e4' || lpad(to_hex(t), 18, '0'),
          'zendesk', 'ticket.created' from generate_series(1, ${TRASHED_AGENTS}) t;
      insert into chatbots (id, org_id, public_id, name, agent_id)
        select 'chatbot_5ca1e4' || lpad(to_hex(t), 18, '0'), 'org_5ca1e1' || lpad(to_hex(1 + t % ${SMALL_ORGS}), 18, '0'), 'pub_5ca1e4' || t, 'Bot ' || t,
          'agent_5ca1e4' || lpad(to_hex(t), 18, '0') from generate_series(1, ${TRASHED_AGENTS}) t`],

    [`${EXPIRED_IDEMPOTENCY} expired idempotency records`, `insert into idempotency_records (org_id, key, fingerprint, status, body, created_at, expires_at)
      select 'org_5ca1e1' || lpad(to_hex(1 + g % ${SMALL_ORGS}), 18, '0'), 'seed-' || g, 'fingerprint', 201, '{"id":"x"}'::json,
        now() - interval '3 days', now() - interval '2 days' + interval '1 millisecond' * g
      from generate_series(1, ${EXPIRED_IDEMPOTENCY}) g`],
  ];
}

/** Puts the purge jobs' rows back (a jobs run removes them), unless they are there. */
export async function reseedJobRows(pool: Pool, log: (line: string) => void): Promise<void> {
  const [{ n }] = (await pool.query(`select count(*)::int as n from agents where id like 'agent_5ca1e4%'`)).rows;
  if (n > 0) return;
  for (const [name, text] of jobRowStatements()) {
    const started = performance.now();
    await pool.query(text);
    log(`  ${name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  await pool.query('vacuum (analyze) agents');
  await pool.query('vacuum (analyze) idempotency_records');
}
