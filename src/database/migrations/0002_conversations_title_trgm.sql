-- Custom migration (drizzle-kit cannot express an extension or GIN storage options).
--
-- GIN indexes of the conversation filters are read-optimized: with fastupdate on
-- (the default) new rows wait in a pending list that every lookup scans until
-- (auto)vacuum merges it, and the embedded engine has no autovacuum.
ALTER INDEX "conversations_ticket_ids_gin" SET (fastupdate = off);--> statement-breakpoint
ALTER INDEX "conversations_metadata_gin" SET (fastupdate = off);--> statement-breakpoint
-- `q` on GET /conversations is a case-insensitive substring search of the title;
-- a trigram GIN index keeps a rare term from scanning every conversation of the
-- organization. Where pg_trgm is not installed the index is skipped and search
-- still works (ILIKE needs no extension), only slower.
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
  CREATE INDEX IF NOT EXISTS conversations_title_trgm_idx ON conversations USING gin (title gin_trgm_ops) WITH (fastupdate = off);
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'pg_trgm unavailable (%): conversations title search runs without a trigram index', SQLERRM;
END
$$;
