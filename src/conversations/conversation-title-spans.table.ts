import { index, pgTable, text } from 'drizzle-orm/pg-core';

/**
 * Which trigrams the titles of each span of ids hold (the top 12 bits of the id's creation second, 12.1 days, as
 * three hex digits: `conversation_title_span_keys` spells spans the same way), of every organization: one row per
 * span and trigram, written by a trigger on every insert and title change of a conversation (migration 0016),
 * never deleted (a row left by a deleted or retitled conversation only costs a span walked for nothing). The
 * bucket walk of `q` reads the spans that hold every trigram of the term from here, where a lookup of the span
 * index decoded every entry of a span where the term is dense (ConversationsRepository.qBuckets).
 *
 * No unique key: two transactions that add the same new pair would wait on each other's insert (and two bulk
 * inserts could deadlock); the trigger adds a pair only when it finds none, and a race leaves a duplicate the
 * reads do not mind. Spans of equal length in hex digits order the same in every collation.
 */
export const conversationTitleSpans = pgTable(
  'conversation_title_spans',
  {
    trigram: text('trigram').notNull(),
    span: text('span').notNull(),
  },
  (t) => [index('conversation_title_spans_trigram_span_idx').on(t.trigram, t.span)],
);
