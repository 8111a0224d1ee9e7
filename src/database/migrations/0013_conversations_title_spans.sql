-- online migration: every statement runs on its own, outside a transaction (src/database/migration-runner.ts), so that on a live table of millions of conversations no index build blocks writes.
--
-- The id buckets of 0011 cost one GIN lookup each, found or not: a term bunched in an old period made `q` walk 626-761 empty buckets (16-22 ms at ten million rows, the lookups' setup, not their pages). These keys are the same trigrams prefixed by the id's span, 16 buckets (the top 12 bits of the id's creation second, 12.1 days), so one lookup tells whether any of 16 buckets can hold the term (ConversationsRepository.qBuckets walks only the buckets of spans that can). The organization key per span, as in 0011, for the organizations with few rows a bucket. Same trigram split as conversation_title_trigrams.
CREATE OR REPLACE FUNCTION conversation_title_span_keys(org_id text, id text, title text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(array_agg(substr(id, 6, 3) || substr(w, i, 3)), '{}') || (substr(id, 6, 3) || org_id) FROM regexp_split_to_table(lower(title), '[^a-z0-9]+') w, generate_series(1, length(w) - 2) i
$$;--> statement-breakpoint
-- read-optimized like 0011's: no pending list. drizzle-kit cannot express the function: this index is not in schema.ts.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "conversations_title_span_gin" ON "conversations" USING gin (conversation_title_span_keys("org_id", "id", "title")) WITH (fastupdate = off);
