-- online migration: every statement runs on its own, outside a transaction (src/database/migration-runner.ts), so that on a live table of millions of conversations no index build blocks writes.
--
-- The bucket where a bunched term's newest matches start read every match of its 18.2 hours (7,213 rows for a term in 0.1 % of ten million titles, 7.7 ms of heap reads, checks and sorting) to keep the newest 26. These keys are the same trigrams prefixed by the id's slice, a sixteenth of a bucket (the top 20 bits of the id's creation second, 68 minutes), so ConversationsRepository.qBuckets, for an organization with many rows per bucket, only asks whether a bucket holds the term (0011's index) and reads the matches slice by slice (at most ~650 of that organization's rows a slice at ten million). No organization key: an organization with few rows per bucket reads its buckets whole, with theirs. Same trigram split as conversation_title_trigrams.
CREATE OR REPLACE FUNCTION conversation_title_slice_keys(id text, title text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(array_agg(substr(id, 6, 5) || substr(w, i, 3)), '{}') FROM regexp_split_to_table(lower(title), '[^a-z0-9]+') w, generate_series(1, length(w) - 2) i
$$;--> statement-breakpoint
-- read-optimized like 0011's: no pending list. drizzle-kit cannot express the function: this index is not in the tables' files.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "conversations_title_slice_gin" ON "conversations" USING gin (conversation_title_slice_keys("id", "title")) WITH (fastupdate = off);
