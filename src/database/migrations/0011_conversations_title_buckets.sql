-- online migration: every statement runs on its own, outside a transaction (src/database/migration-runner.ts), so that on a live table of millions of conversations no index build blocks writes.
--
-- `q` with a term in more titles than the trigram step reads and none among the newest rows walked the organization's rows from the newest to the first match: seconds, or the statement timeout, at ten million rows for a term bunched in an old period. The plain trigram index cannot bound it: a lookup reads the term's whole posting list, whatever range follows. These keys are each title's trigrams prefixed by its id's bucket (the top 16 bits of the id's creation second, 18.2 hours), so "the rows of bucket B holding the term" reads posting lists no longer than the bucket. Plain SQL, no pg_trgm: the same trigrams on every engine. A title's trigrams are those of its runs of ASCII letters and digits after lower(); a term's trigrams come from the same function, so every title that contains the term (ILIKE: lower(title) contains lower(term)) holds each of them. The two functions must split alike.
CREATE OR REPLACE FUNCTION conversation_title_trigrams(title text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(array_agg(substr(w, i, 3)), '{}') FROM regexp_split_to_table(lower(title), '[^a-z0-9]+') w, generate_series(1, length(w) - 2) i
$$;--> statement-breakpoint
-- One more key per row, the bucket and the organization: a lookup ANDs it with the trigrams, so a small organization's reads only its own rows of the bucket, not every organization's that hold the term.
CREATE OR REPLACE FUNCTION conversation_title_bucket_keys(org_id text, id text, title text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(array_agg(substr(id, 6, 4) || substr(w, i, 3)), '{}') || (substr(id, 6, 4) || org_id) FROM regexp_split_to_table(lower(title), '[^a-z0-9]+') w, generate_series(1, length(w) - 2) i
$$;--> statement-breakpoint
-- read-optimized like the other GIN indexes (0002): no pending list for every lookup to scan. drizzle-kit cannot express the functions: this index is not in schema.ts.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "conversations_title_bucket_gin" ON "conversations" USING gin (conversation_title_bucket_keys("org_id", "id", "title")) WITH (fastupdate = off);
