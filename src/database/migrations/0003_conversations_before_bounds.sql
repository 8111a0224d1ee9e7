-- Custom migration: lets GET /conversations with created_before / last_message_before
-- stay an index scan (see ConversationsRepository.list).
--
-- Ids start with their creation time in seconds (libs/ids), so rows whose id time is
-- after a bound T cannot satisfy `created_at <= T` — unless their created_at is earlier
-- than their own id time (backdated rows, e.g. fixtures with explicit ids). Those few
-- rows are indexed here; every other row is found by scanning ids below the bound.
CREATE OR REPLACE FUNCTION conversation_id_time(id text) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT to_timestamp(('x' || substr(id, length(id) - 23, 8))::bit(32)::bigint) $$;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS conversations_org_created_early_idx ON conversations (org_id, id)
  WHERE created_at < conversation_id_time(id);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS conversations_org_last_message_early_idx ON conversations (org_id, id)
  WHERE last_message_at < conversation_id_time(id);
