-- Custom migration: lets GET /conversations with created_before / last_message_before
-- stay an index scan (see ConversationsRepository.listQuery).
--
-- Ids are `conv_` + 24 hex starting with their creation time in seconds (libs/ids), so
-- rows whose id time is after a bound T cannot satisfy `created_at <= T` — unless their
-- created_at is earlier than their own id time (backdated rows, e.g. fixtures with
-- explicit ids). Only those few rows are indexed here; every other match is found by
-- scanning ids below the bound. The predicate must stay spelled exactly like ID_TIME in
-- conversations.repository.ts for the planner to use these indexes.
CREATE INDEX IF NOT EXISTS conversations_org_created_early_idx ON conversations (org_id, id)
  WHERE created_at < to_timestamp(('x' || substr(id, 6, 8))::bit(32)::bigint);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS conversations_org_last_message_early_idx ON conversations (org_id, id)
  WHERE last_message_at < to_timestamp(('x' || substr(id, 6, 8))::bit(32)::bigint);
