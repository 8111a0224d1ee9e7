import { Inject, Injectable } from '@nestjs/common';
import { smallestIdAt } from '../../libs/ids/ids';
import { and, asc, desc, eq, getTableColumns, gt, gte, inArray, lt, lte, ne, or, sql, type SQL } from 'drizzle-orm';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import { orgScopedById } from '../database/org-scoped-reads';
import { upsertOrgRows } from '../database/org-scoped-upsert';
import { conversations, messages } from '../database/schema';
import type { ConversationFilters } from './conversations.filters';

export type ConversationRow = typeof conversations.$inferSelect;
export type NewConversationRow = typeof conversations.$inferInsert;
export type MessageRow = typeof messages.$inferSelect;
export type NewMessageRow = typeof messages.$inferInsert;

/** Everything but the trigger payload (large, personal data) and the ticket id index column. */
const { triggerPayload: _payload, ticketIds: _tickets, ...summaryColumns } = getTableColumns(conversations);
export type ConversationSummaryRow = Omit<ConversationRow, 'triggerPayload' | 'ticketIds'>;

const { orgId: _messageOrg, conversationId: _messageConversation, ...messageColumns } = getTableColumns(messages);
export type MessageViewRow = Omit<MessageRow, 'orgId' | 'conversationId'>;

/**
 * The creation second encoded at the start of a conversation id, as a time.
 * Spelled exactly like the predicates of the `…_early_idx` partial indexes
 * (migration 0003), so the planner matches them; inline rather than a SQL
 * function, so the query stays correct even where that migration is missing.
 */
const ID_TIME = sql.raw(`to_timestamp(('x' || substr("conversations"."id", 6, 8))::bit(32)::bigint)`);

/** `%`, `_` and `\` are ILIKE wildcards / the escape character: make them literal. */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** A metadata value given as a string also matches the same scalar stored as a number or boolean. */
function metadataMatch(key: string, value: string): SQL {
  const alternatives: unknown[] = [value];
  if (/^-?(0|[1-9]\d{0,14})(\.\d+)?$/.test(value)) alternatives.push(Number(value));
  if (value === 'true' || value === 'false') alternatives.push(value === 'true');
  const conditions = alternatives.map((alt) => sql`${conversations.metadata} @> ${JSON.stringify({ [key]: alt })}::jsonb`);
  return conditions.length === 1 ? conditions[0] : or(...conditions)!;
}

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

@Injectable()
export class ConversationsRepository {
  private readonly byId;
  private readonly byIdWithPayload;
  private readonly messagesOf;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.byId = orgScopedById(db, conversations, 'conversation_detail', { columns: summaryColumns });
    this.byIdWithPayload = orgScopedById(db, conversations, 'conversation_detail_with_payload', {
      columns: { ...summaryColumns, triggerPayload: conversations.triggerPayload },
    });
    this.messagesOf = db
      .select(messageColumns)
      .from(messages)
      .where(and(eq(messages.orgId, sql.placeholder('orgId')), eq(messages.conversationId, sql.placeholder('conversationId'))))
      .orderBy(asc(messages.id))
      .prepare('conversation_detail_thread');
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
    const joined = and(
      eq(messages.orgId, conversations.orgId),
      eq(messages.conversationId, conversations.id),
      afterId === null ? undefined : gt(messages.id, afterId),
    );
    const rows = await this.db
      .select({ conversationId: conversations.id, message: messageColumns })
      .from(conversations)
      .leftJoin(messages, joined)
      .where(and(eq(conversations.orgId, orgId), eq(conversations.id, conversationId)))
      .orderBy(asc(messages.id))
      .limit(fetch);
    if (rows.length === 0) return null;
    return rows.flatMap((row) => (row.message?.id ? [row.message as MessageViewRow] : []));
  }

  /** Newest first, keyset on id; every filter maps to an indexed predicate (see docs/decisions.md). */
  list(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number): Promise<ConversationSummaryRow[]> {
    return this.listQuery(orgId, filters, afterId, fetch);
  }

  /**
   * The list query itself, unexecuted (the benchmark prints its plan with EXPLAIN ANALYZE).
   *
   * With `created_before` / `last_message_before` a plain `ORDER BY id DESC` scan
   * would walk every newer row before reaching the bound (the planner cannot know
   * ids and times are correlated). Ids start with their creation second, so the
   * query is split: rows with an id below the bound's second (index scan from the
   * bound down), plus the few rows whose time is earlier than their own id time
   * (partial index `…_early_idx`, migration 0003) — together exactly the rows
   * that can satisfy the bound.
   */
  listQuery(orgId: string, filters: ConversationFilters, afterId: string | null, fetch: number) {
    const c = conversations;
    const where = this.filterConditions(orgId, filters, afterId);
    const bound = filters.createdBefore
      ? { at: filters.createdBefore, early: sql`${c.createdAt} < ${ID_TIME}` }
      : filters.lastMessageBefore
        ? { at: filters.lastMessageBefore, early: sql`${c.lastMessageAt} < ${ID_TIME}` }
        : null;
    const select = (conditions: Array<SQL | undefined>) =>
      this.db
        .select(summaryColumns)
        .from(c)
        .where(and(...conditions))
        .orderBy(desc(c.id))
        .limit(fetch);
    const seconds = bound ? Math.floor(Date.parse(bound.at) / 1000) + 1 : 0;
    if (!bound || seconds > 0xffffffff) return select(where);
    const boundId = smallestIdAt('conversation', Math.max(0, seconds));
    return select([...where, lt(c.id, boundId)])
      .unionAll(select([...where, gte(c.id, boundId), bound.early]))
      .orderBy(desc(c.id))
      .limit(fetch);
  }

  private filterConditions(orgId: string, filters: ConversationFilters, afterId: string | null): Array<SQL | undefined> {
    const c = conversations;
    return [
      eq(c.orgId, orgId),
      // spec: sub-agent runs are returned only when source=sub-agent is passed explicitly
      filters.source ? eq(c.source, filters.source) : ne(c.source, 'sub-agent'),
      filters.agentId ? eq(c.agentId, filters.agentId) : undefined,
      filters.model ? eq(c.model, filters.model) : undefined,
      filters.parentConversationId ? eq(c.parentConversationId, filters.parentConversationId) : undefined,
      filters.conversationNumber !== undefined ? eq(c.conversationNumber, filters.conversationNumber) : undefined,
      filters.createdAfter ? gte(c.createdAt, new Date(filters.createdAfter)) : undefined,
      filters.createdBefore ? lte(c.createdAt, new Date(filters.createdBefore)) : undefined,
      filters.lastMessageAfter ? gte(c.lastMessageAt, new Date(filters.lastMessageAfter)) : undefined,
      filters.lastMessageBefore ? lte(c.lastMessageAt, new Date(filters.lastMessageBefore)) : undefined,
      filters.ticketId !== undefined ? sql`${c.ticketIds} @> array[${filters.ticketId}]::text[]` : undefined,
      ...Object.entries(filters.metadata ?? {}).map(([key, value]) => metadataMatch(key, value)),
      // backslash is LIKE's default escape character; without an ESCAPE clause the trigram index applies
      filters.q !== undefined ? sql`${c.title} ilike ${likeContains(filters.q)}` : undefined,
      // literal predicates (not parameters), so the partial indexes `where is_simulation` / `where is_onboarding` match
      filters.isSimulation === undefined ? undefined : filters.isSimulation ? sql`${c.isSimulation}` : sql`not ${c.isSimulation}`,
      filters.isOnboarding === undefined ? undefined : filters.isOnboarding ? sql`${c.isOnboarding}` : sql`not ${c.isOnboarding}`,
      afterId === null ? undefined : lt(c.id, afterId),
    ];
  }

  /**
   * Upserts conversations by id (scoped to the org: an id owned by another
   * organization is not touched) and replaces their message threads.
   * Returns the ids that were written.
   */
  async upsertMany(orgId: string, rows: NewConversationRow[], threads: Map<string, NewMessageRow[]>, tx: DbOrTx = this.db): Promise<string[]> {
    if (rows.length === 0) return [];
    const written: string[] = [];
    for (let start = 0; start < rows.length; start += 500) {
      written.push(...(await upsertOrgRows(tx, conversations, orgId, rows.slice(start, start + 500), FIXTURE_COLUMNS)));
    }
    const ids = [...threads.keys()].filter((id) => written.includes(id));
    for (let start = 0; start < ids.length; start += 500) {
      await tx.delete(messages).where(and(eq(messages.orgId, orgId), inArray(messages.conversationId, ids.slice(start, start + 500))));
    }
    const all = ids.flatMap((id) => threads.get(id) ?? []).map((row) => ({ ...row, orgId }));
    for (let start = 0; start < all.length; start += 500) {
      await tx
        .insert(messages)
        .values(all.slice(start, start + 500))
        .onConflictDoNothing({ target: messages.id });
    }
    return written;
  }
}
