-- online migration: every statement runs on its own, outside a transaction (src/database/migration-runner.ts), so that on a live table of millions of conversations no index build blocks writes and no statement rewrites the table.
--
-- source + model: a combination of two common values that matches few or no rows (embed conversations never use one model) made the planner walk the organization's newest-first index and filter millions of rows; this index answers it in a page.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "conversations_org_source_model_idx" ON "conversations" USING btree ("org_id","source","model","id");--> statement-breakpoint
-- parent_conversation_id is null on every top-level conversation: only sub-agent runs are indexed (the filter is an equality, which implies not null).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "conversations_org_parent_set_idx" ON "conversations" USING btree ("org_id","parent_conversation_id","id") WHERE "parent_conversation_id" IS NOT NULL;--> statement-breakpoint
DROP INDEX CONCURRENTLY IF EXISTS "conversations_org_parent_idx";--> statement-breakpoint
-- metadata[KEY]: the organization is part of every indexed key ({org: metadata}), so a small organization's lookup reads its own entries, not every organization's with the same key and value. Spelled exactly like the list query's predicate.
CREATE INDEX CONCURRENTLY IF NOT EXISTS "conversations_org_metadata_gin" ON "conversations" USING gin ((jsonb_set('{}'::jsonb, ARRAY["org_id"], "metadata")) jsonb_path_ops) WITH (fastupdate = off);--> statement-breakpoint
DROP INDEX CONCURRENTLY IF EXISTS "conversations_metadata_gin";--> statement-breakpoint
-- statistics, no write cost: correlated columns (an agent's models, a source's models) are not multiplied as independent, and the backdated-row predicates of the `*_before` split are known to match almost nothing.
CREATE STATISTICS IF NOT EXISTS "conversations_source_model_stats" (dependencies, mcv) ON "org_id", "source", "model" FROM "conversations";--> statement-breakpoint
CREATE STATISTICS IF NOT EXISTS "conversations_agent_model_stats" (dependencies, mcv) ON "org_id", "agent_id", "model" FROM "conversations";--> statement-breakpoint
CREATE STATISTICS IF NOT EXISTS "conversations_created_early_stats" ON (("created_at" < to_timestamp(('x' || substr("id", 6, 8))::bit(32)::bigint))) FROM "conversations";--> statement-breakpoint
CREATE STATISTICS IF NOT EXISTS "conversations_last_message_early_stats" ON (("last_message_at" < to_timestamp(('x' || substr("id", 6, 8))::bit(32)::bigint))) FROM "conversations";--> statement-breakpoint
ANALYZE "conversations";
