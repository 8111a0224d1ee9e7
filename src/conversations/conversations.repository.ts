import { Injectable } from '@nestjs/common';
import { smallestIdAt } from '../../libs/ids/ids';
import { and, asc, desc, eq, getTableColumns, gt, gte, inArray, lt, lte, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../database/database.types';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgScopedById } from '../database/org-scoped-reads';
import { upsertOrgRows } from '../database/org-scoped-upsert';
import { conversations, messages } from './conversations.table';
import { conversationTitleSpans } from './conversation-title-spans.table';
import type { ConversationFilters } from './conversations.filters';
import { prepareNamed } from '../database/prepared-statements';
import { ShapeStatements } from '../database/shape-statements';

type ConversationRow = typeof conversations.$inferSelect;
export type NewConversationRow = typeof conversations.$inferInsert;
type MessageRow = typeof messages.$inferSelect;
export type NewMessageRow = typeof messages.$inferInsert;

/** Everything but the trigger payload (large, personal data) and the ticket id index column. */
const { triggerPayload: _payload, ticketIds: _tickets, ...summaryColumns } = getTableColumns(conversations);
export type ConversationSummaryRow = Omit<ConversationRow, 'triggerPayload' | 'ticketIds'>;

const { orgId: _messageOrg, conversationId: _messageConversation, ...messageColumns } = getTableColumns(messages);
export type MessageViewRow = Omit<MessageRow, 'orgId' | 'conversationId'>;

/** The creation second at the start of a conversation id, spelled as the `…_early_idx` partial indexes spell it (so they match). */
const ID_TIME = sql.raw(`to_timestamp(('x' || substr("conversations"."id", 6, 8))::bit(32)::bigint)`);

/** Created a second or more after its id's second (`…_created_late_idx` spells it so): the rows below `created_after`'s id bound that may still match it. */
const CREATED_LATE = sql.raw(`"conversations"."created_at" >= to_timestamp(('x' || substr("conversations"."id", 6, 8))::bit(32)::bigint + 1)`);

/** `%`, `_` and `\` are ILIKE wildcards / the escape character: make them literal. */
function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** A metadata value given as a string also matches the same scalar stored as a number or boolean. */
function metadataAlternatives(value: string): unknown[] {
  const alternatives: unknown[] = [value];
  if (/^-?(0|[1-9]\d{0,14})(\.\d+)?$/.test(value)) alternatives.push(Number(value));
  if (value === 'true' || value === 'false') alternatives.push(value === 'true');
  return alternatives;
}

/**
 * One predicate of the list query: its part of the shape key, its SQL
 * (placeholders only) and their values. `planStable`: a generic plan serves
 * every value (docs/decisions.md, "Prepared list statements").
 */
interface ListTerm {
  shape: string;
  condition: () => SQL;
  values?: Record<string, unknown>;
  planStable: boolean;
  /** an equality on a column whose values are very unequal in frequency (one agent may hold a quarter of the rows) */
  skewed?: boolean;
}

/** Conversations the `q` probe reads, newest first, before it falls back to the trigram index. */
export const Q_PROBE_ROWS = 5_000;
/**
 * Pages a term's share promises from the rows the probe reads when the id buckets take it (termRoute): with 4, a term
 * spread evenly is expected to match 104 of them for a page of 25, and fewer than 26 only by a large chance.
 */
export const PROBE_PAGES = 4;
/**
 * The most rows the probe reads before the id buckets (termRoute): a term bunched away from the newest rows fails it
 * whatever its share, and read all Q_PROBE_ROWS of them (4-7 ms at 10 M, 1 % and 5 % terms beside the busiest agent)
 * before the buckets found its page in 1-2 ms; 500 rows cost about 0.5 ms, and a term in a fifth of the titles or
 * more fills a page of 25 from them, where the buckets would read the matches of a whole slice (1.4-1.8 ms for 50 %).
 */
export const Q_BUCKET_PROBE_ROWS = 500;
/**
 * Matches of `q` the trigram step may read before the term counts as frequent (then the id buckets find its
 * newest matches). Each match is a heap page read: 10,000 of them took 30-39 ms at 10 M rows, where the buckets
 * answered the same term (0.1 % of the titles, spread) in 1.1 ms; a term over this bound spread evenly fills a
 * page within ~13 of the 963 buckets of two years (docs/decisions.md).
 */
export const Q_TRIGRAM_MATCHES = 2_000;
/**
 * The share of titles from which a term skips the trigram step for the id buckets (termShare: its rarest
 * trigram's). The trigram step's bitmap reads every posting-list entry of the term's trigrams before its bound
 * can stop anything: 1 ms for a term in 0.06 % of 15.5 M titles, 14 ms at 0.6 %, where its matches in a
 * big organization already pass Q_TRIGRAM_MATCHES and the buckets answer after it. The statistics list trigrams
 * down to about 0.05 % (migration 0014): one they do not list counts as rare.
 */
export const Q_BUCKET_TERM_SHARE = 0.0003;
/**
 * The share of titles from which the trigram step's bitmap may take a metadata value's index instead of
 * checking the value on the term's matches: then the term's posting lists are the long side of that bitmap.
 */
export const Q_FREQUENT_SHARE = 0.005;
/**
 * Matches of `q` the id buckets may read (the rows their lookups return, passing the other filters or not) before
 * they stop and leave the page to the trigram step. Beside filters that keep 10 % of the rows a page reads ~250
 * of them (Q_BUCKET_FILTER_SHARE); a common value that never occurs with a frequent term would read all its
 * matches, bucket after bucket, to find none (docs/decisions.md).
 */
export const Q_BUCKET_ROWS = 5_000;

/**
 * The smallest share of the organization's rows the filters beside a frequent `q` may keep for it to go to the id
 * buckets with them. The buckets check those filters on the term's matches, so the matches read for a page grow as
 * 1/share (250 for a page of 25 at 10 %); below it the trigram step, whose bitmap joins the filter's own index and
 * answers a rare or absent value at once, where the buckets would read every match of the term to find none.
 */
const Q_BUCKET_FILTER_SHARE = 0.1;
/**
 * Rows of the filters beside a frequent `q` whose span of seconds measures how common they are (commonFilters),
 * against the organization's newest Q_PROBE_ROWS. The probe may have just read up to Q_PROBE_ROWS of the same rows;
 * reading them all again took 3.4 ms beside the busiest agent at 10 M (their pages are scattered), and a tenth of
 * them tells a tenth of the rows as well.
 */
export const Q_DENSITY_ROWS = 500;
/**
 * The filters that may go to the id buckets beside a frequent `q`: equalities and flags whose density is one short
 * read of their own index, newest first (the rows the probe has just read). The others keep the trigram step.
 */
const BUCKET_FILTERS: ReadonlySet<string> = new Set<keyof ConversationFilters>(['q', 'agentId', 'source', 'model', 'isSimulation', 'isOnboarding']);

/** The creation second of an id (its first 8 hex digits after the prefix). */
function idSecond(id: string): number {
  return parseInt(id.slice(5, 13), 16);
}

/**
 * The planner settings of the trigram step, for its transaction only: a bitmap scan is the one way left to it;
 * and no JIT compilation, which its cost estimate (over the jit threshold at 10 M rows) switched on, spending
 * ~50 ms of a 166 ms statement compiling code for 20,000 rows.
 */
const BITMAP_SCANS_SETTINGS = `set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true), set_config('enable_indexonlyscan', 'off', true), set_config('jit', 'off', true)`;
const BITMAP_SCANS_ONLY = sql.raw(`select ${BITMAP_SCANS_SETTINGS}`);

/**
 * The bucket step's settings, for its transaction only: BITMAP_SCANS_ONLY, and no parallel workers, which the
 * planner started for each bucket's scan (two workers launched per bucket, 17 ms each, 6.9-12.3 s in all at 10 M);
 * and its statement's generic plan, from the first execution on: the walk's nested loops read the same indexes
 * whatever the values (same buffers as the custom plans for every bucket case at 10 M), and a named statement
 * planned once saves the 1-2 ms of planning each request paid.
 */
const BUCKET_SCANS = sql.raw(
  `select ${BITMAP_SCANS_SETTINGS}, set_config('max_parallel_workers_per_gather', '0', true), set_config('plan_cache_mode', 'force_generic_plan', true)`,
);

/**
 * The probe's setting below a `*_before` bound, for its transaction only: no JIT compilation. The split's
 * estimate for 5,000 rows (its backdated branch's partial index counted whole) passed the JIT threshold, and
 * compiling took ~17 ms of a probe that reads 1,551 rows in 1.4 ms at 10 M.
 */
const NO_JIT = sql.raw(`select set_config('jit', 'off', true)`);

/** The organization's metadata documents keyed by the organization, spelled like the `conversations_org_metadata_gin` index. */
const ORG_METADATA = sql.raw(`jsonb_set('{}'::jsonb, ARRAY["conversations"."org_id"], "conversations"."metadata")`);

const placeholder = (name: string) => sql.placeholder(name);

/** How `q` is read (ConversationsRepository.termRoute). */
export interface TermRoute {
  /**
   * How many of the newest rows the probe reads first: none for a term the statistics call rare; when the buckets take
   * the term, the rows where its share promises PROBE_PAGES pages, or none when that is over Q_BUCKET_PROBE_ROWS
   */
  probeRows: number;
  /** the id buckets before the trigram step */
  bucketsFirst: boolean;
  /** the trigram step checks a metadata value on the term's matches instead of reading its index */
  checkMetadata: boolean;
  /** the trigram step reads the trigram index alone, the other filters checked on its matches */
  termOnly: boolean;
}

/** What `qBuckets` needs to know first: the organization's id range and the term's trigrams (space-separated). */
export interface QBucketScope {
  newest: string | null;
  oldest: string | null;
  trigrams: string | null;
  /** the organization's Q_PROBE_ROWS-th newest id, null when it has fewer rows */
  edge: string | null;
}

/**
 * Rows of its own per bucket below which an organization's lookups add its bucket key. That key keeps a small
 * organization from reading every organization's rows of the bucket that hold the term; for an organization
 * with many rows per bucket those are mostly its own, and the key's posting list costs more than it saves
 * (1.7× the time of the lookups at 10,400 rows a bucket: 39 against 23 ms for 761 buckets).
 */
const ORG_KEY_BELOW_ROWS_PER_BUCKET = 1_000;

/** Whether the organization's rows are sparse enough in a bucket for its bucket key to pay (from the probe's span of ids). */
function sparseOrganization(scope: QBucketScope): boolean {
  if (!scope.edge || !scope.newest) return true;
  const seconds = idSecond(scope.newest) - idSecond(scope.edge) + 1;
  return (Q_PROBE_ROWS * 2 ** 16) / seconds < ORG_KEY_BELOW_ROWS_PER_BUCKET;
}

/**
 * The slice of an id: its creation second's top 20 bits, as `conversation_title_slice_keys` spells them; its bucket
 * (`conversation_title_bucket_keys`) is the top 16 of them, its span (`conversation_title_span_keys`) the top 12.
 */
function idSlice(id: string): number {
  return parseInt(id.slice(5, 10), 16);
}

/** Trigrams a bucket's lookup uses: each costs an index descent per bucket, and any subset finds every match (the ILIKE rechecks). */
const BUCKET_TRIGRAMS = 4;

/** At most BUCKET_TRIGRAMS of the term's trigrams, spread over it (overlapping neighbours add little). */
function spreadTrigrams(all: string[]): string[] {
  const distinct = [...new Set(all)];
  if (distinct.length <= BUCKET_TRIGRAMS) return distinct;
  return Array.from({ length: BUCKET_TRIGRAMS }, (_, i) => distinct[Math.round((i * (distinct.length - 1)) / (BUCKET_TRIGRAMS - 1))]);
}

/** `metadata[KEY]` filters, each matched against a document spelled as ORG_METADATA spells it (`{org_id: metadata}`). */
function metadataFilters(orgId: string, metadata: Record<string, string> | undefined) {
  return Object.entries(metadata ?? {}).map(([key, value], i) => {
    // the key travels inside the JSON value: only the number of alternatives shapes the SQL
    const alternatives = metadataAlternatives(value);
    const names = alternatives.map((_, j) => `metadata${i}_${j}`);
    const values = Object.fromEntries(alternatives.map((alt, j) => [names[j], JSON.stringify({ [orgId]: { [key]: alt } })]));
    const condition = (document: SQL) => or(...names.map((name) => sql`${document} @> ${placeholder(name)}::jsonb`))!;
    return { shape: `metadata${i}x${names.length}`, condition, values };
  });
}

/** The predicates for these filters, in a fixed order, so that equal shapes build equal SQL. */
function listTerms(orgId: string, filters: ConversationFilters, afterId: string | null): ListTerm[] {
  const c = conversations;
  const terms: ListTerm[] = [];
  const add = (shape: string, condition: () => SQL, values?: Record<string, unknown>, planStable = true, skewed = false) =>
    terms.push({ shape, condition, values, planStable, skewed });
  const compare = (shape: string, value: unknown, condition: (p: ReturnType<typeof placeholder>) => SQL, planStable = true, skewed = false) =>
    add(shape, () => condition(placeholder(shape)), { [shape]: value }, planStable, skewed);
  // timestamps go in as ISO text: a placeholder's value bypasses drizzle's column mapping
  const iso = (text: string) => new Date(text).toISOString();

  // sub-agent runs are returned only when source=sub-agent is passed explicitly
  if (filters.source) compare('source', filters.source, (p) => eq(c.source, p), true, true);
  else add('not_sub_agent', () => ne(c.source, 'sub-agent'));
  if (filters.agentId) compare('agentId', filters.agentId, (p) => eq(c.agentId, p), true, true);
  if (filters.model) compare('model', filters.model, (p) => eq(c.model, p), true, true);
  if (filters.parentConversationId) compare('parentConversationId', filters.parentConversationId, (p) => eq(c.parentConversationId, p));
  if (filters.conversationNumber !== undefined) compare('conversationNumber', filters.conversationNumber, (p) => eq(c.conversationNumber, p));
  if (filters.createdAfter) compare('createdAfter', iso(filters.createdAfter), (p) => gte(c.createdAt, p), false);
  if (filters.createdBefore) compare('createdBefore', iso(filters.createdBefore), (p) => lte(c.createdAt, p), false);
  if (filters.lastMessageAfter) compare('lastMessageAfter', iso(filters.lastMessageAfter), (p) => gte(c.lastMessageAt, p), false);
  if (filters.lastMessageBefore) compare('lastMessageBefore', iso(filters.lastMessageBefore), (p) => lte(c.lastMessageAt, p), false);
  if (filters.ticketId !== undefined) compare('ticketId', filters.ticketId, (p) => sql`${c.ticketIds} @> array[${p}]::text[]`, false);
  for (const filter of metadataFilters(orgId, filters.metadata)) add(filter.shape, () => filter.condition(ORG_METADATA), filter.values, false);
  // backslash is LIKE's default escape character; without an ESCAPE clause the trigram index applies
  if (filters.q !== undefined) compare('q', likeContains(filters.q), (p) => sql`${c.title} ilike ${p}`, false);
  // literal predicates (not parameters), so the partial indexes `where is_simulation` / `where is_onboarding` match
  if (filters.isSimulation !== undefined) add(`simulation:${filters.isSimulation}`, () => (filters.isSimulation ? sql`${c.isSimulation}` : sql`not ${c.isSimulation}`));
  if (filters.isOnboarding !== undefined) add(`onboarding:${filters.isOnboarding}`, () => (filters.isOnboarding ? sql`${c.isOnboarding}` : sql`not ${c.isOnboarding}`));
  if (afterId !== null) compare('afterId', afterId, (p) => lt(c.id, p));
  return terms;
}

/** Named list statements kept per process (each exists on every pooled connection that ran it). */
const MAX_PREPARED_SHAPES = 128;
/** List statements kept per process in all (the unnamed ones hold only their SQL text, here). */
const MAX_LIST_STATEMENTS = 1024;

/** The columns a fixture re-seed overwrites on an existing conversation. */
const FIXTURE_COLUMNS = [
  'title',
  'source',
  'agentId',
  'model',
  'autonomous',
  'isOnboarding',
  'isSimulation',
  'conversationNumber',
  'parentConversationId',
  'creditsUsed',
  'metadata',
  'triggerPayload',
  'ticketIds',
  'messageCount',
  'lastMessageAt',
  'createdAt',
  'updatedAt'
] as const;

/** A list statement, prepared or built for one request. */
interface ListStatement {
  execute(values: Record<string, unknown>): Promise<ConversationSummaryRow[]>;
}

/** A list query as drizzle built it (a select, or a union of two). */
interface ListQuery extends ListStatement {
  toSQL(): { sql: string; params: unknown[] };
  prepare(name: string): ListStatement;
}

/** The summary columns of conversations: the select every list query is made of. */
function selectSummaries(db: Database) {
  return db.select(summaryColumns).from(conversations);
}

@Injectable()
export class ConversationsRepository {
  private readonly byId;
  private readonly byIdWithPayload;
  private readonly messagesOf;
  /** the organization's newest and oldest ids and the trigrams of a `q` term, for `qBuckets` */
  readonly bucketScope;
  /** the share of titles holding a `q` term's rarest trigram, for termShare */
  private readonly termShareStatement;
  /** list statements by filter shape, each built once (docs/decisions.md, "Prepared list statements") */
  private readonly listStatements;

  constructor(
    private readonly txHost: TransactionHost<DatabaseTransactions>,
  ) {
    this.byId = orgScopedById(txHost, conversations, { statementPrefix: 'conversation_detail', columns: summaryColumns });
    this.byIdWithPayload = orgScopedById(txHost, conversations, {
      statementPrefix: 'conversation_detail_with_payload',
      columns: { ...summaryColumns, triggerPayload: conversations.triggerPayload },
    });
    this.listStatements = new ShapeStatements<ConversationSummaryRow>(txHost, {
      namePrefix: 'conversation_list',
      maxNamed: MAX_PREPARED_SHAPES,
      maxShapes: MAX_LIST_STATEMENTS,
    });
    this.messagesOf = prepareNamed(txHost, 'conversation_detail_thread', (db) =>
      db
        .select(messageColumns)
        .from(messages)
        .where(and(eq(messages.orgId, sql.placeholder('orgId')), eq(messages.conversationId, sql.placeholder('conversationId'))))
        .orderBy(asc(messages.id)),
    );
    // the term's trigrams against the trigrams the statistics list, with their shares of the sampled titles
    // (the freqs array ends with three more numbers, min, max and the null share, which meet no trigram);
    // null without trigrams (no row to take the min of) or without the statistics
    this.termShareStatement = prepareNamed(txHost, 'conversation_list_q_term_share', (db) =>
      db
        .select({
          share: sql<number | null>`case when exists (select from pg_stats_ext_exprs s where s.schemaname = current_schema() and s.statistics_name = 'conversations_title_trigram_stats')
            then min(coalesce(listed.share, 0)) end`,
        })
        .from(
          sql`unnest(conversation_title_trigrams(${sql.placeholder('q')})) term(trigram) left join (
            select m.trigram, m.share from pg_stats_ext_exprs s, unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) m(trigram, share)
            where s.schemaname = current_schema() and s.statistics_name = 'conversations_title_trigram_stats'
          ) listed on listed.trigram = term.trigram`,
        ),
    );
    this.bucketScope = prepareNamed(txHost, 'conversation_list_q_bucket_scope', (db) =>
      db
        .select({
          newest: sql<string | null>`max(${conversations.id})`,
          oldest: sql<string | null>`min(${conversations.id})`,
          trigrams: sql<string | null>`array_to_string(conversation_title_trigrams(${sql.placeholder('q')}), ' ')`,
          // how dense the organization's recent rows are: its Q_PROBE_ROWS-th newest id (an index-only read of that many entries)
          edge: sql<string | null>`(select ${conversations.id} from ${conversations} where ${conversations.orgId} = ${sql.placeholder('orgId')} order by ${conversations.id} desc offset ${Q_PROBE_ROWS - 1} limit 1)`,
        })
        .from(conversations)
        .where(eq(conversations.orgId, sql.placeholder('orgId'))),
    );
  }

  findById(orgId: string, id: string, withPayload: boolean): Promise<(ConversationSummaryRow & { triggerPayload?: unknown }) | null> {
    return (withPayload ? this.byIdWithPayload : this.byId).findById(orgId, id);
  }

  /** The whole thread, oldest first. */
  listAllMessages(orgId: string, conversationId: string): Promise<MessageViewRow[]> {
    return this.messagesOf.execute({ orgId, conversationId });
  }

  /**
   * One page of a conversation's messages, oldest first, in one query: the
   * conversation row anchors a left join, so an unknown conversation (no row)
   * is told apart from an empty thread (one row with a null message).
   */
  async pageMessages(orgId: string, conversationId: string, afterId: string | null, fetch: number): Promise<MessageViewRow[] | null> {
    // the page alone, read in order from (org_id, conversation_id, id): a lateral subquery with its own
    // limit, so a long thread is never joined and sorted whole after the cursor
    const page = this.txHost.tx
      .select(messageColumns)
      .from(messages)
      .where(and(eq(messages.orgId, conversations.orgId), eq(messages.conversationId, conversations.id), afterId === null ? undefined : gt(messages.id, afterId)))
      .orderBy(asc(messages.id))
      .limit(fetch)
      .as('page');
    const rows = await this.txHost.tx
      .select({
        conversationId: conversations.id,
        message: {
          id: page.id,
          role: page.role,
          content: page.content,
          toolCalls: page.toolCalls,
          toolCallId: page.toolCallId,
          toolName: page.toolName,
          connectorType: page.connectorType,
          model: page.model,
          createdAt: page.createdAt,
        },
      })
      .from(conversations)
      .leftJoinLateral(page, sql`true`)
      .where(and(eq(conversations.orgId, orgId), eq(conversations.id, conversationId)))
      .orderBy(asc(page.id));
    if (rows.length === 0) return null;
    return rows.flatMap((row) => (row.message?.id ? [row.message as MessageViewRow] : []));
  }

  /**
   * Newest first, keyset on id. Each filter shape's SQL is built once; a
   * plan-stable shape runs as a named prepared statement (at most
   * MAX_PREPARED_SHAPES), other shapes unnamed, so PostgreSQL plans them with
   * their values (docs/decisions.md, "Prepared list statements").
   */
  async list(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number): Promise<ConversationSummaryRow[]> {
    const route = await this.termRoute(filters, fetch);
    const probe = route?.probeRows === 0 ? null : this.probe(orgId, filters, afterId, fetch, route?.probeRows);
    if (probe) {
      const statement = this.listStatement(`probe:${probe.shape}`, false, probe.build);
      const recent = probe.split ? await this.withSettings(NO_JIT, statement, probe.values) : await statement.execute(probe.values);
      if (recent.length >= fetch) return recent;
    }
    // `q` past the probe, or without it (termRoute); without `q`, a metadata value absent from the newest rows is
    // rare: its own index answers it (the walk below)
    if (route) {
      const byTerm = await this.listByTerm(orgId, filters, afterId, fetch, route);
      if (byTerm) return byTerm;
    }
    const plan = this.listQuery(orgId, filters, afterId, fetch);
    return this.listStatement(plan.shape, plan.planStable, plan.build).execute(plan.values);
  }

  /** `q` after the probe, or without it: the id buckets or the trigram step; null when neither answered exactly (then the walk). */
  private async listByTerm(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number, route: TermRoute): Promise<ConversationSummaryRow[] | null> {
    // a frequent term skips the trigram step, whose bitmap would read millions of posting-list entries,
    // alone or beside filters common enough for the buckets (commonFilters); beside a rare or absent value
    // that bitmap joins the value's index and answers at once (an absent agent: 0.06 ms). A common value
    // that never meets the term stops the buckets at their row bound (null), and the trigram step answers.
    // The term's frequency also decides how the trigram step reads a metadata value (qTrigram)
    const alone = Object.keys(filters).length === 1;
    if (route.bucketsFirst) {
      const [scope] = await this.bucketScope.execute({ orgId, q: filters.q });
      if (alone || (scope && (await this.commonFilters(orgId, filters, afterId, scope)))) {
        const byBuckets = await this.listByBuckets(orgId, filters, afterId, fetch, scope);
        if (byBuckets) return byBuckets;
      }
    }
    const trigram = this.qTrigram(orgId, filters, afterId, fetch, route)!;
    const statement = this.listStatement(`q-trigram:${trigram.shape}`, false, trigram.build);
    const read = (await this.withSettings(BITMAP_SCANS_ONLY, statement, trigram.values)) as Array<ConversationSummaryRow & { matched?: number; passes?: boolean }>;
    if (read.length === 0 || Number(read[0].matched) < Q_TRIGRAM_MATCHES) return read.filter((row) => row.passes).map(({ matched: _count, passes: _passes, ...row }) => row);
    return this.listByBuckets(orgId, filters, afterId, fetch);
  }

  /**
   * The statement of a shape, built once: named when a generic plan serves
   * every value (PostgreSQL may plan it once), else unnamed, planned with each
   * execution's values. Past the bounds, shapes are built per request.
   */
  private listStatement(shape: string, planStable: boolean, build: (db: Database) => ListQuery): ListStatement {
    return this.listStatements.statement(shape, planStable, build);
  }

  /**
   * `q` and `metadata[…]` first look at the newest Q_PROBE_ROWS conversations (for `q`
   * fewer, or none, as termRoute decides from the term's share)
   * that pass the other filters (an ordered index walk that stops there): a
   * term in many titles, or a common metadata value, fills the page from
   * them, where the trigram or metadata index would have returned every
   * matching row of the organization (166,491 for a metadata value in 1.7 %
   * of the rows at 10 M: 46 ms to read that index alone). When the page is
   * not full, the value is rare enough for its index, and the next step runs.
   * The page is the same either way: those rows are the newest candidates, so
   * their matches are the newest matches.
   */
  probe(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number, rows = Q_PROBE_ROWS) {
    if (filters.q === undefined && filters.metadata === undefined) return null;
    // `q` with a `*_before` bound: the split query, planned whole, answers it (the trigram and bucket steps
    // do not take the split); metadata alone is probed below the bound too (the split is an ordered walk)
    if (filters.q !== undefined && (filters.createdBefore || filters.lastMessageBefore)) return null;
    // metadata is checked on the probed rows, not used to pick them: no index returns its matches
    // in id order, so the newest 5,000 rows with a common key walked the organization's rows
    // (hundreds of thousands per 5,000 at 1 M); the newest matches of a prefix are still the newest
    // so are the lower time bounds: the planner read "the newest 5,000 rows created in the last 7 days" from
    // the created_at index, all ~100,000 of them, sorted (210 ms at 10 M), where they are the newest 5,000 rows
    const { q, metadata, createdAfter, lastMessageAfter, ...others } = filters;
    const inner = this.listQuery(orgId, others, afterId, rows);
    const probed = metadataFilters(orgId, metadata);
    const values = {
      ...inner.values,
      ...Object.assign({}, ...probed.map((filter) => filter.values)),
      ...(createdAfter === undefined ? {} : { probeCreatedAfter: new Date(createdAfter).toISOString() }),
      ...(lastMessageAfter === undefined ? {} : { probeLastMessageAfter: new Date(lastMessageAfter).toISOString() }),
      fetch: rows,
      probeFetch: fetch,
      ...(q === undefined ? {} : { q: likeContains(q) }),
    };
    const build = (db: Database) => {
      const recent = (inner.build(db) as unknown as ReturnType<typeof selectSummaries>).as('recent');
      return db
        .select()
        .from(recent)
        .where(
          and(
            q === undefined ? undefined : sql`${recent.title} ilike ${sql.placeholder('q')}`,
            ...probed.map((filter) => filter.condition(sql`jsonb_set('{}'::jsonb, ARRAY[${recent.orgId}], ${recent.metadata})`)),
            createdAfter === undefined ? undefined : gte(recent.createdAt, sql.placeholder('probeCreatedAfter')),
            lastMessageAfter === undefined ? undefined : gte(recent.lastMessageAt, sql.placeholder('probeLastMessageAfter')),
          ),
        )
        .orderBy(desc(recent.id))
        .limit(sql.placeholder('probeFetch'));
    };
    const checked = [
      ...(q === undefined ? [] : ['q']),
      ...probed.map((filter) => filter.shape),
      ...(createdAfter ? ['createdAfter'] : []),
      ...(lastMessageAfter ? ['lastMessageAfter'] : []),
    ];
    return { shape: [inner.shape, ...checked].join(','), values, build, split: inner.split };
  }

  /**
   * `q` when the probe did not fill the page: every match of the term and the
   * other filters from the trigram index (a bitmap scan: the one kind of scan
   * its transaction allows, so an estimate cannot turn it into a walk), at most
   * Q_TRIGRAM_MATCHES of them, the newest `fetch` kept. Each row carries
   * `matched`, how many the index returned: the page is exact below the
   * bound; at the bound the term is frequent, and the id buckets find its
   * newest matches sooner than reading all of them would. With
   * `checkMetadata` (a term the statistics do not call frequent),
   * `metadata[…]` is checked on the term's matches, not joined from its
   * index: a common value's index entries (166,491 at 10 M, 46 ms) cost more
   * than checking the term's few matches. Each row then carries `passes`,
   * whether it passes the metadata too: the rows that do come first, and one
   * that does not still tells `matched` when none does. Beside a frequent
   * term the bitmap may take the metadata index (a rare value's few entries,
   * where the term's posting lists hold millions). With `termOnly` (a rare
   * term) the trigram index is the only index it reads.
   */
  qTrigram(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number, route: Pick<TermRoute, 'checkMetadata' | 'termOnly'> = { checkMetadata: true, termOnly: false }) {
    const { checkMetadata, termOnly } = route;
    if (filters.q === undefined || filters.createdBefore || filters.lastMessageBefore) return null;
    const inner = this.listQuery(orgId, filters, afterId, fetch);
    const values = { ...inner.values, matchBound: Q_TRIGRAM_MATCHES };
    const { metadata, ...others } = filters;
    const indexed = checkMetadata ? others : filters;
    const checked = checkMetadata ? metadataFilters(orgId, metadata) : [];
    const build = (db: Database) => {
      const c = conversations;
      // a rare term's own index alone: `(…) is true` is no index condition, so the other filters are checked on its matches
      const condition = (term: ListTerm) => (!termOnly || term.shape === 'q' || term.shape === 'afterId' ? term.condition() : sql`(${term.condition()}) is true`);
      const where = and(eq(c.orgId, sql.placeholder('orgId')), ...listTerms(orgId, indexed, afterId).map(condition));
      const all = db.select({ id: c.id, orgId: c.orgId, metadata: c.metadata }).from(c).where(where).limit(sql.placeholder('matchBound')).as('matches');
      const document = sql`jsonb_set('{}'::jsonb, ARRAY[${all.orgId}], ${all.metadata})`;
      const passes = checked.length === 0 ? sql`true` : sql`coalesce(${and(...checked.map((filter) => filter.condition(document)))}, false)`;
      const newest = db
        .select({ id: all.id, matched: sql<number>`count(*) over ()`.as('matched'), passes: sql<boolean>`${passes}`.as('passes') })
        .from(all)
        .orderBy(...(checked.length === 0 ? [] : [sql`${passes} desc`]), desc(all.id))
        .limit(sql.placeholder('fetch'))
        .as('newest');
      return db
        .select({ ...summaryColumns, matched: newest.matched, passes: newest.passes })
        .from(c)
        .innerJoin(newest, and(eq(c.orgId, sql.placeholder('orgId')), eq(c.id, newest.id)))
        .orderBy(desc(c.id)) as unknown as ListQuery;
    };
    return { shape: [inner.shape, ...(checked.length === 0 ? [] : ['metadata-checked']), ...(termOnly ? ['term-only'] : [])].join(','), values, build };
  }

  /**
   * How `q` is read, from the term's share of the titles (termShare): without the probe when the statistics call it
   * rare (under Q_BUCKET_TERM_SHARE the newest Q_PROBE_ROWS rows hold 1.5 of its matches on average, and reading
   * them cost 3-10 ms at 10 M, where the trigram step answers in 0.05-3.3); when the buckets take it, only the rows
   * where it would match PROBE_PAGES pages if spread evenly, and none when those are over Q_BUCKET_PROBE_ROWS (a term
   * bunched among the newest rows fills the page from the buckets' first bucket); by the id buckets first (at least
   * Q_BUCKET_TERM_SHARE, beside filters the buckets take); by the trigram index alone, every other filter checked
   * on its matches (under Q_BUCKET_TERM_SHARE or unknown: few matches, where the planner, misjudging a rare value,
   * read an agent's 15,355 rows for a term in 100 titles, 73 ms at 10 M); a metadata value checked on the term's
   * matches (under Q_FREQUENT_SHARE) or read from its index. Null without `q`, or with a `*_before` bound (the split
   * query answers it whole).
   */
  async termRoute(filters: ConversationFilters, fetch: number): Promise<TermRoute | null> {
    if (filters.q === undefined || filters.createdBefore || filters.lastMessageBefore) return null;
    const known = await this.termShare(filters.q);
    const share = known ?? 0;
    const bucketsFirst = this.bucketFilters(filters) && share >= Q_BUCKET_TERM_SHARE;
    let probeRows = Q_PROBE_ROWS;
    if (known !== null && known < Q_BUCKET_TERM_SHARE) probeRows = 0;
    else if (known !== null && bucketsFirst) {
      const promised = Math.ceil((PROBE_PAGES * fetch) / known);
      probeRows = promised <= Q_BUCKET_PROBE_ROWS ? promised : 0;
    }
    return {
      probeRows,
      bucketsFirst,
      checkMetadata: share < Q_FREQUENT_SHARE,
      termOnly: share < Q_BUCKET_TERM_SHARE,
    };
  }

  /**
   * At most the share of titles that hold the term: its rarest trigram's share among the titles ANALYZE sampled
   * (`conversations_title_trigram_stats`, migration 0014), 0 when one of its trigrams is not among the trigrams the
   * statistics list (rarer than about 0.05 %). Null when unknown: the term has no trigram (fewer than three letters
   * or digits in a row), or there are no statistics (never analyzed, or a database role that does not own the
   * table: the view shows them to the owner only).
   */
  async termShare(q: string): Promise<number | null> {
    const [row] = await this.termShareStatement.execute({ q });
    return row?.share === null || row?.share === undefined ? null : Number(row.share);
  }

  /**
   * Whether the filters beside `q` keep at least Q_BUCKET_FILTER_SHARE of the organization's rows: their newest
   * Q_DENSITY_ROWS rows below the cursor per second against the organization's newest Q_PROBE_ROWS (`scope.edge`)
   * per second. False for other filters than BUCKET_FILTERS, and for an organization with fewer rows than
   * Q_PROBE_ROWS or a value with fewer than Q_DENSITY_ROWS (the trigram step reads few of them).
   */
  async commonFilters(orgId: string, filters: ConversationFilters, afterId: string | null, scope: QBucketScope): Promise<boolean> {
    const density = this.qDensity(orgId, filters, afterId);
    if (!density || !scope.newest || !scope.edge) return false;
    const statement = this.listStatement(`q-density:${density.shape}`, false, density.build);
    const [row] = (await statement.execute(density.values)) as unknown as Array<{ id: string | null; count: number }>;
    if (!row?.id || Number(row.count) < Q_DENSITY_ROWS) return false;
    const filtered = idSecond(afterId ?? scope.newest) - idSecond(row.id) + 1;
    const all = idSecond(scope.newest) - idSecond(scope.edge) + 1;
    return all * Q_DENSITY_ROWS >= filtered * Q_PROBE_ROWS * Q_BUCKET_FILTER_SHARE;
  }

  /** Whether these filters may go to the id buckets beside a frequent `q` (the rest is commonFilters' measure). */
  bucketFilters(filters: ConversationFilters): boolean {
    return Object.keys(filters).every((key) => BUCKET_FILTERS.has(key));
  }

  /**
   * The statement of commonFilters: the oldest id of the newest Q_DENSITY_ROWS rows passing the filters beside `q`,
   * below the cursor, and how many there are. Null for filters the buckets do not take.
   */
  qDensity(orgId: string, filters: ConversationFilters, afterId: string | null) {
    const { q: _q, ...others } = filters;
    if (!this.bucketFilters(others)) return null;
    const inner = this.listQuery(orgId, others, afterId, Q_DENSITY_ROWS);
    const build = (db: Database) => {
      const newest = (inner.build(db) as unknown as ReturnType<typeof selectSummaries>).as('newest');
      return db.select({ id: sql<string | null>`min(${newest.id})`, count: sql<number>`count(*)` }).from(newest) as unknown as ListQuery;
    };
    return { shape: inner.shape, values: inner.values, build };
  }

  /**
   * The page of `q` by `qBuckets`, or null where it does not apply or the buckets read `rowBound` of the term's
   * matches without filling the page (then the trigram step or the ordered walk answers).
   */
  async listByBuckets(
    orgId: string,
    filters: ConversationFilters,
    afterId: string | null,
    fetch: number,
    known?: QBucketScope,
    rowBound = Q_BUCKET_ROWS,
  ): Promise<ConversationSummaryRow[] | null> {
    if (filters.q === undefined) return null;
    const scope = known ?? (await this.bucketScope.execute({ orgId, q: filters.q }))[0];
    const buckets = this.qBuckets(orgId, filters, afterId, fetch, scope, rowBound);
    if (!buckets) return null;
    const statement = this.listStatement(`q-buckets:${buckets.shape}`, true, buckets.build);
    const rows = (await this.withSettings(BUCKET_SCANS, statement, buckets.values)) as Array<ConversationSummaryRow & { bounded: boolean | null }>;
    // one row at least: the page's rows, or a row of nulls when it is empty
    const page = rows.filter((row) => row.id !== null).map(({ bounded: _bounded, ...row }) => row);
    return page.length < fetch && rows[0]?.bounded ? null : page;
  }

  /** Runs `statement` under planner `settings` set for its own transaction only (`set_config(…, true)`). */
  private withSettings(settings: SQL, statement: ListStatement, values: Record<string, unknown>): Promise<ConversationSummaryRow[]> {
    return this.txHost.withTransaction(async () => {
      await this.txHost.tx.execute(settings);
      return statement.execute(values);
    });
  }

  /**
   * `q` when the term is frequent (the trigram step reached its bound) and
   * none of the newest rows matched: the organization's history in buckets of
   * 2^16 seconds of the id (`conversations_title_bucket_gin` keys each title's
   * trigrams by its id's bucket, and each row by its bucket and organization),
   * newest bucket first, from the cursor's. In each bucket a bitmap of the
   * rows holding the term's trigrams (and, for an organization with few rows
   * per bucket, its bucket key; for one with many, in each slice of a bucket
   * that holds the term, `conversations_title_slice_gin`), rechecked by
   * the filters and the ILIKE, the newest `fetch` kept; the next bucket only
   * while the page is not full. A bucket without the term costs a few index
   * pages, one with it at most its own rows (docs/decisions.md, "`q`: a
   * frequent term away from the newest rows"). Null when the term has no
   * trigram (no run of three letters or digits) or the organization no rows.
   */
  qBuckets(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number, scope: QBucketScope | undefined, rowBound = Q_BUCKET_ROWS) {
    if (filters.q === undefined || filters.createdBefore || filters.lastMessageBefore) return null;
    if (!scope?.newest || !scope.oldest || !scope.trigrams) return null;
    const trigrams = spreadTrigrams(scope.trigrams.split(' '));
    const topSlice = idSlice(afterId ?? scope.newest);
    const bottomSlice = idSlice(scope.oldest);
    if (topSlice < bottomSlice) return null;
    const terms = listTerms(orgId, filters, afterId);
    const spanTrigram = trigrams[Math.floor(trigrams.length / 2)];
    const values: Record<string, unknown> = {
      orgId,
      fetch,
      top: topSlice >> 4,
      bottom: bottomSlice >> 4,
      trigrams: trigrams.join(' '),
      spanTrigram,
      rowBound,
    };
    for (const term of terms) Object.assign(values, term.values);
    const orgKey = sparseOrganization(scope);
    const spanHex = (slice: number) => (slice >> 8).toString(16).padStart(3, '0');
    if (!orgKey) Object.assign(values, { topSlice, bottomSlice, topSpan: spanHex(topSlice), bottomSpan: spanHex(bottomSlice), trigramCount: trigrams.length });
    const shape = [...terms.map((term) => term.shape), orgKey ? 'org-key' : 'no-org-key'].join(',');
    const build = (db: Database) => {
      const c = conversations;
      const bucketOrg = orgKey ? sql` || (lpad(to_hex(b.n), 4, '0') || ${placeholder('orgId')})` : sql``;
      const spanOrg = orgKey ? sql` || (lpad(to_hex(s.n), 3, '0') || ${placeholder('orgId')})` : sql``;
      // the term's trigrams, each prefixed by a bucket's or a slice's key
      const trigramKeys = (unit: SQL) => sql`array(select ${unit} || t from unnest(string_to_array(${placeholder('trigrams')}, ' ')) t)`;
      // the buckets to look up, newest first: those of the spans (16 buckets) that can hold the term. For an
      // organization with many rows per bucket, the spans whose titles hold every looked-up trigram of the term
      // (conversation_title_spans: one index range per trigram, whatever the term's density; the span index's lookup
      // decoded every entry of a span where the term is dense, 7-8 ms at 10 M). For one with few, the spans whose
      // lookup of conversations_title_span_gin finds one of the organization's rows holding the term's middle
      // trigram (its organization key keeps other organizations' rows out; a span without it costs one lookup
      // instead of 16; one trigram: each key's list is decoded whole)
      const spans = orgKey
        ? sql`select s.n from generate_series(${placeholder('top')}::int / 16, ${placeholder('bottom')}::int / 16, -1) s(n)
          where exists (select from ${c} where conversation_title_span_keys(${c.orgId}, ${c.id}, ${c.title})
            @> (array[lpad(to_hex(s.n), 3, '0') || ${placeholder('spanTrigram')}::text]${spanOrg}))`
        : sql`select ('x' || p.span)::bit(12)::int as n from ${conversationTitleSpans} p
          where p.trigram = any(string_to_array(${placeholder('trigrams')}, ' ')) and p.span between ${placeholder('bottomSpan')} and ${placeholder('topSpan')}
          group by p.span having count(distinct p.trigram) = ${placeholder('trigramCount')}::int order by p.span desc`;
      const buckets = sql`select b.n from (${spans}) s
          cross join lateral generate_series(least(${placeholder('top')}::int, s.n * 16 + 15), greatest(${placeholder('bottom')}::int, s.n * 16), -1) b(n)`;
      // an organization with many rows per bucket reads a bucket that holds the term slice by slice (16 per bucket,
      // conversations_title_slice_gin), newest first, once the bucket's own lookup of the middle trigram finds a row:
      // the bucket where a bunched term starts holds thousands of its matches, a slice a sixteenth of them. An
      // organization with few rows per bucket reads the bucket whole, its lookup ANDed with the organization's key
      const units = orgKey
        ? sql`select ${trigramKeys(sql`lpad(to_hex(b.n), 4, '0')`)}${bucketOrg} as keys from (${buckets}) b`
        : sql`select ${trigramKeys(sql`lpad(to_hex(x.n), 5, '0')`)} as keys from (${buckets}) b
            cross join lateral generate_series(least(${placeholder('topSlice')}::int, b.n * 16 + 15), greatest(${placeholder('bottomSlice')}::int, b.n * 16), -1) x(n)
            where exists (select from ${c} where conversation_title_bucket_keys(${c.orgId}, ${c.id}, ${c.title})
              @> array[lpad(to_hex(b.n), 4, '0') || ${placeholder('spanTrigram')}::text])`;
      const lookup = orgKey
        ? sql`conversation_title_bucket_keys(${c.orgId}, ${c.id}, ${c.title})`
        : sql`conversation_title_slice_keys(${c.id}, ${c.title})`;
      // every candidate of each bucket or slice, newest first, whether it passes or not: the candidates of one from
      // its keys alone (OFFSET 0 keeps the filters and the ILIKE out of that scan, so no other index, e.g. the
      // plain trigram index, which reads every match of the organization, joins it); at most rowBound of them
      // in all, numbered as they come (k), the page's rows taken while they come (both limits stop the walk)
      const candidates = sql`select m.id, m.passes, row_number() over () as k from (
          select m.id, m.passes from (${units}) u
          cross join lateral (
            select ${c.id}, coalesce(${and(eq(c.orgId, placeholder('orgId')), ...terms.map((term) => term.condition()))}, false) as passes from (
              select * from ${c} where ${lookup} @> u.keys
              offset 0
            ) ${c}
            order by ${c.id} desc
          ) m limit ${placeholder('rowBound')}
        ) m`;
      // the page, and whether the walk reached rowBound before filling it (the rowBound-th candidate comes too)
      const page = sql`select array_agg(p.id) filter (where p.passes) as ids, bool_or(p.k = ${placeholder('rowBound')}) as bounded
        from (select s.id, s.passes, s.k from (${candidates}) s where s.passes or s.k = ${placeholder('rowBound')} limit ${placeholder('fetch')}) p`;
      return db
        .select({ ...summaryColumns, bounded: sql<boolean | null>`page.bounded` })
        .from(sql`(${page}) page`)
        .leftJoin(c, and(eq(c.orgId, placeholder('orgId')), sql`${c.id} = any(page.ids)`))
        .orderBy(desc(c.id)) as unknown as ListQuery;
    };
    return { shape, values, build };
  }

  /** The filter shapes that are named prepared statements now (for tests and diagnostics). */
  preparedShapes(): string[] {
    return this.listStatements.namedShapes();
  }

  /**
   * The list query of this filter shape: `build` (placeholders only), its
   * `values`, and the `shape` key it is cached by. A `*_before` bound splits
   * it at the bound's id second, so the scan starts at the bound instead of
   * walking every newer row (docs/decisions.md, "Why the `*_before` split").
   */
  listQuery(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number) {
    const c = conversations;
    const terms = listTerms(orgId, filters, afterId);
    const values: Record<string, unknown> = { orgId, fetch };
    for (const term of terms) Object.assign(values, term.values);
    const bound = filters.createdBefore
      ? { at: filters.createdBefore, shape: 'split:created', early: () => sql`${c.createdAt} < ${ID_TIME}` }
      : filters.lastMessageBefore
        ? { at: filters.lastMessageBefore, shape: 'split:last_message', early: () => sql`${c.lastMessageAt} < ${ID_TIME}` }
        : null;
    const seconds = bound ? Math.floor(Date.parse(bound.at) / 1000) + 1 : 0;
    const split = bound && seconds <= 0xffffffff ? bound : null;
    if (split) values.boundId = smallestIdAt('conversation', Math.max(0, seconds));
    // `created_after` bounds the ids from below: a row created before its id's second + 1 s and at or after the
    // bound has its id at or after the bound's second. Used only when that is at or above the split's bound: no id
    // is in between, so the walk below the split's bound is left out, and the later-created rows, which are not
    // bound so, come from their partial index. Planned beside the walk, the lower bound made the planner multiply
    // two estimates of one range (the ids and created_at after the bound) and read the whole week (165 ms)
    const lowSeconds = split && filters.createdAfter ? Math.floor(Date.parse(filters.createdAfter) / 1000) : -1;
    const lowId = lowSeconds >= 0 && lowSeconds <= 0xffffffff ? smallestIdAt('conversation', lowSeconds) : null;
    const empty = lowId !== null && lowId >= (values.boundId as string);
    const shape = [...terms.map((term) => term.shape), split?.shape ?? 'unsplit', ...(empty ? ['empty:created'] : [])].join(',');

    const build = (db: Database) => {
      const where = [eq(c.orgId, sql.placeholder('orgId')), ...terms.map((term) => term.condition())];
      const select = (conditions: SQL[]) =>
        selectSummaries(db)
          .where(and(...conditions))
          .orderBy(desc(c.id))
          .limit(sql.placeholder('fetch'));
      if (!split) return select(where);
      // the backdated rows, read from their partial index first (an initplan): planned as one query,
      // this branch walked every row newer than the bound through another index, filtering them all
      const backdated = sql`${c.id} = any(array(select ${c.id} from ${c} where ${c.orgId} = ${sql.placeholder('orgId')} and ${split.early()} and ${c.id} >= ${sql.placeholder('boundId')}))`;
      const rest = select([...where, backdated]);
      if (!empty) return select([...where, lt(c.id, sql.placeholder('boundId'))]).unionAll(rest).orderBy(desc(c.id)).limit(sql.placeholder('fetch'));
      // below the split's bound only the rows created a second or more after their id's (at or above it they fail
      // the `*_before` bound, unless backdated, and are in the branch above)
      const late = sql`${c.id} = any(array(select ${c.id} from ${c} where ${c.orgId} = ${sql.placeholder('orgId')} and ${CREATED_LATE} and ${c.id} < ${sql.placeholder('boundId')}))`;
      return select([...where, late]).unionAll(rest).orderBy(desc(c.id)).limit(sql.placeholder('fetch'));
    };
    // a skewed equality beside another filter (a flag included): their rows overlap anywhere from all
    // to none, and a generic plan, made once for average values, walks one of them filtering by the
    // other (every simulation of the organization for an agent with a handful of rows); planned with
    // the values, the rarer side leads. Alone, its own index returns its rows in order for any value
    const skewed = terms.some((term) => term.skewed);
    const filtered = terms.filter((term) => term.shape !== 'not_sub_agent' && term.shape !== 'afterId').length;
    const planStable = !split && (!skewed || filtered === 1) && terms.every((term) => term.planStable);
    return { shape, values, build, planStable, split: split !== null };
  }

  /**
   * Upserts conversations by id (scoped to the org: an id owned by another
   * organization is not touched) and replaces their message threads.
   * Returns the ids that were written.
   */
  async upsertMany(orgId: string, rows: NewConversationRow[], threads: Map<string, NewMessageRow[]>): Promise<string[]> {
    if (rows.length === 0) return [];
    const written: string[] = [];
    for (let start = 0; start < rows.length; start += 500) {
      written.push(...(await upsertOrgRows(this.txHost.tx, conversations, orgId, rows.slice(start, start + 500), FIXTURE_COLUMNS)));
    }
    const ids = [...threads.keys()].filter((id) => written.includes(id));
    for (let start = 0; start < ids.length; start += 500) {
      await this.txHost.tx.delete(messages).where(and(eq(messages.orgId, orgId), inArray(messages.conversationId, ids.slice(start, start + 500))));
    }
    const all = ids.flatMap((id) => threads.get(id) ?? []).map((row) => ({ ...row, orgId }));
    for (let start = 0; start < all.length; start += 500) {
      await this.txHost.tx
        .insert(messages)
        .values(all.slice(start, start + 500))
        .onConflictDoNothing({ target: messages.id });
    }
    return written;
  }
}
