import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { smallestIdAt } from '../../libs/ids/ids';
import { and, asc, desc, eq, getTableColumns, gt, gte, inArray, lt, lte, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../database/database.types';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgScopedById } from '../database/org-scoped-reads';
import { upsertOrgRows } from '../database/org-scoped-upsert';
import { conversations, messages } from '../database/schema';
import type { ConversationFilters } from './conversations.filters';
import { prepareNamed, prepareUnnamed } from '../database/prepared-statements';

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
/** Matches of `q` the trigram index may return before the term counts as frequent (then the ordered walk runs). */
export const Q_TRIGRAM_MATCHES = 20_000;
/**
 * The planner settings of the trigram step, for its transaction only: a bitmap scan is the one way left to it;
 * and no JIT compilation, which its cost estimate (over the jit threshold at 10 M rows) switched on, spending
 * ~50 ms of a 166 ms statement compiling code for 20,000 rows.
 */
const BITMAP_SCANS_ONLY = sql.raw(
  `select set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true), set_config('enable_indexonlyscan', 'off', true), set_config('jit', 'off', true)`,
);

/** The organization's metadata documents keyed by the organization, spelled like the `conversations_org_metadata_gin` index. */
const ORG_METADATA = sql.raw(`jsonb_set('{}'::jsonb, ARRAY["conversations"."org_id"], "conversations"."metadata")`);

const placeholder = (name: string) => sql.placeholder(name);

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

/** The summary columns of conversations: the select every list query is made of. */
function selectSummaries(db: Database) {
  return db.select(summaryColumns).from(conversations);
}

/** A list statement, prepared or built for one request. */
interface ListStatement {
  execute(values: Record<string, unknown>): Promise<ConversationSummaryRow[]>;
}

/** A list query as drizzle built it (a select, or a union of two). */
interface ListQuery extends ListStatement {
  toSQL(): { sql: string; params: unknown[] };
  prepare(name: string): ListStatement;
}

@Injectable()
export class ConversationsRepository {
  private readonly byId;
  private readonly byIdWithPayload;
  private readonly messagesOf;
  /** prepared list statements by filter shape */
  private readonly listStatements = new Map<string, ListStatement>();
  /** the shapes whose statements are named (a generic plan may serve them) */
  private readonly namedShapes = new Set<string>();

  constructor(
    private readonly txHost: TransactionHost<DatabaseTransactions>,
  ) {
    this.byId = orgScopedById(txHost, conversations, { statementPrefix: 'conversation_detail', columns: summaryColumns });
    this.byIdWithPayload = orgScopedById(txHost, conversations, {
      statementPrefix: 'conversation_detail_with_payload',
      columns: { ...summaryColumns, triggerPayload: conversations.triggerPayload },
    });
    this.messagesOf = prepareNamed(txHost, 'conversation_detail_thread', (db) =>
      db
        .select(messageColumns)
        .from(messages)
        .where(and(eq(messages.orgId, sql.placeholder('orgId')), eq(messages.conversationId, sql.placeholder('conversationId'))))
        .orderBy(asc(messages.id)),
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
    const probe = this.qProbe(orgId, filters, afterId, fetch);
    if (probe) {
      const recent = await this.listStatement(`q-probe:${probe.shape}`, false, probe.build).execute(probe.values);
      if (recent.length >= fetch) return recent;
      const trigram = this.qTrigram(orgId, filters, afterId, fetch)!;
      const statement = this.listStatement(`q-trigram:${trigram.shape}`, false, trigram.build);
      const matched = (await this.txHost.withTransaction(async () => {
        await this.txHost.tx.execute(BITMAP_SCANS_ONLY);
        return statement.execute(trigram.values);
      })) as Array<ConversationSummaryRow & { matched?: number }>;
      if (matched.length === 0 || Number(matched[0].matched) < Q_TRIGRAM_MATCHES) return matched.map(({ matched: _count, ...row }) => row);
    }
    const plan = this.listQuery(orgId, filters, afterId, fetch);
    return this.listStatement(plan.shape, plan.planStable, plan.build).execute(plan.values);
  }

  /**
   * The statement of a shape, built once: named when a generic plan serves
   * every value (PostgreSQL may plan it once), else unnamed, planned with each
   * execution's values. Past the bounds, shapes are built per request.
   */
  private listStatement(shape: string, planStable: boolean, build: (db: Database) => ListQuery): ListStatement {
    const kept = this.listStatements.get(shape);
    if (kept) return kept;
    const named = planStable && this.namedShapes.size < MAX_PREPARED_SHAPES;
    if (this.listStatements.size >= MAX_LIST_STATEMENTS) return build(this.txHost.tx);
    const statement = named
      ? prepareNamed(this.txHost, `conversation_list_${createHash('sha256').update(shape).digest('hex').slice(0, 16)}`, build)
      : prepareUnnamed(this.txHost, build);
    if (named) this.namedShapes.add(shape);
    this.listStatements.set(shape, statement);
    return statement;
  }

  /**
   * `q` first looks at the newest Q_PROBE_ROWS conversations that pass the
   * other filters (an ordered index walk that stops there): a term in many
   * titles fills the page from them, where the trigram index would have
   * returned every matching row of the organization to be sorted. When the
   * page is not full, the term is rare enough for the trigram index, and the
   * full query runs. The page is the same either way: those rows are the
   * newest candidates, so their matches are the newest matches.
   */
  qProbe(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number) {
    if (filters.q === undefined || filters.createdBefore || filters.lastMessageBefore) return null;
    // metadata is checked on the probed rows, not used to pick them: no index returns its matches
    // in id order, so the newest 5,000 rows with a common key walked the organization's rows
    // (hundreds of thousands per 5,000 at 1 M); the newest matches of a prefix are still the newest
    const { q, metadata, ...others } = filters;
    const inner = this.listQuery(orgId, others, afterId, Q_PROBE_ROWS);
    const probed = metadataFilters(orgId, metadata);
    const values = { ...inner.values, ...Object.assign({}, ...probed.map((filter) => filter.values)), fetch: Q_PROBE_ROWS, probeFetch: fetch, q: likeContains(q) };
    const build = (db: Database) => {
      const recent = (inner.build(db) as unknown as ReturnType<typeof selectSummaries>).as('recent');
      return db
        .select()
        .from(recent)
        .where(
          and(
            sql`${recent.title} ilike ${sql.placeholder('q')}`,
            ...probed.map((filter) => filter.condition(sql`jsonb_set('{}'::jsonb, ARRAY[${recent.orgId}], ${recent.metadata})`)),
          ),
        )
        .orderBy(desc(recent.id))
        .limit(sql.placeholder('probeFetch'));
    };
    return { shape: [inner.shape, ...probed.map((filter) => filter.shape)].join(','), values, build };
  }

  /**
   * `q` when the probe did not fill the page: every match of the term and the
   * other filters from the trigram index (a bitmap scan: the one kind of scan
   * its transaction allows, so an estimate cannot turn it into a walk), at most
   * Q_TRIGRAM_MATCHES of them, the newest `fetch` kept. Each row carries
   * `matched`, how many the index returned: the page is exact below the
   * bound; at the bound the term is frequent, and the ordered walk finds its
   * newest matches sooner than reading all of them would.
   */
  qTrigram(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number) {
    if (filters.q === undefined || filters.createdBefore || filters.lastMessageBefore) return null;
    const inner = this.listQuery(orgId, filters, afterId, fetch);
    const values = { ...inner.values, matchBound: Q_TRIGRAM_MATCHES };
    const build = (db: Database) => {
      const c = conversations;
      const where = and(eq(c.orgId, sql.placeholder('orgId')), ...listTerms(orgId, filters, afterId).map((term) => term.condition()));
      const all = db.select({ id: c.id }).from(c).where(where).limit(sql.placeholder('matchBound')).as('matches');
      const newest = db
        .select({ id: all.id, matched: sql<number>`count(*) over ()`.as('matched') })
        .from(all)
        .orderBy(desc(all.id))
        .limit(sql.placeholder('fetch'))
        .as('newest');
      return db
        .select({ ...summaryColumns, matched: newest.matched })
        .from(c)
        .innerJoin(newest, and(eq(c.orgId, sql.placeholder('orgId')), eq(c.id, newest.id)))
        .orderBy(desc(c.id)) as unknown as ListQuery;
    };
    return { shape: inner.shape, values, build };
  }

  /** The filter shapes that are named prepared statements now (for tests and diagnostics). */
  preparedShapes(): string[] {
    return [...this.namedShapes];
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
    const shape = [...terms.map((term) => term.shape), split?.shape ?? 'unsplit'].join(',');

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
      return select([...where, lt(c.id, sql.placeholder('boundId'))])
        .unionAll(select([...where, backdated]))
        .orderBy(desc(c.id))
        .limit(sql.placeholder('fetch'));
    };
    // a skewed equality beside another filter (a flag included): their rows overlap anywhere from all
    // to none, and a generic plan, made once for average values, walks one of them filtering by the
    // other (every simulation of the organization for an agent with a handful of rows); planned with
    // the values, the rarer side leads. Alone, its own index returns its rows in order for any value
    const skewed = terms.some((term) => term.skewed);
    const filtered = terms.filter((term) => term.shape !== 'not_sub_agent' && term.shape !== 'afterId').length;
    const planStable = !split && (!skewed || filtered === 1) && terms.every((term) => term.planStable);
    return { shape, values, build, planStable };
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
