-- online migration: every statement runs on its own, outside a transaction (src/database/migration-runner.ts), so that on a live table of millions of conversations the backfill blocks no write; each statement can run again.
--
-- Which trigrams the titles of each span of ids hold (conversationTitleSpans in src/conversations/conversation-title-spans.table.ts): the bucket walk of `q` reads the spans that hold every trigram of a term from here, one index range per trigram, where a lookup of the span index (0013) decoded every entry of the span where the term is dense (~100,000 at ten million rows, 7-8 ms). No unique key: the trigger adds a pair it does not find, and a race between two writers leaves a duplicate instead of making one wait on the other.
CREATE TABLE IF NOT EXISTS "conversation_title_spans" (
	"trigram" text NOT NULL,
	"span" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "conversation_title_spans_trigram_span_idx" ON "conversation_title_spans" USING btree ("trigram","span");--> statement-breakpoint
-- the new pairs of a set of conversations: one statement per insert statement (a bulk insert adds each pair once)
CREATE OR REPLACE FUNCTION "conversation_title_spans_add"() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO conversation_title_spans (trigram, span)
    SELECT DISTINCT k.trigram, k.span FROM new_rows n, LATERAL (SELECT t AS trigram, substr(n.id, 6, 3) AS span FROM unnest(conversation_title_trigrams(n.title)) t) k
    WHERE NOT EXISTS (SELECT FROM conversation_title_spans p WHERE p.trigram = k.trigram AND p.span = k.span);
  RETURN NULL;
END
$fn$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "conversations_title_spans_insert" AFTER INSERT ON "conversations" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conversation_title_spans_add();--> statement-breakpoint
-- a changed title (a fixture re-seed): its row only, and only when the title changed
CREATE OR REPLACE FUNCTION "conversation_title_spans_retitle"() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO conversation_title_spans (trigram, span)
    SELECT DISTINCT t, substr(NEW.id, 6, 3) FROM unnest(conversation_title_trigrams(NEW.title)) t
    WHERE NOT EXISTS (SELECT FROM conversation_title_spans p WHERE p.trigram = t AND p.span = substr(NEW.id, 6, 3));
  RETURN NULL;
END
$fn$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "conversations_title_spans_update" AFTER UPDATE OF "title" ON "conversations" FOR EACH ROW WHEN (OLD."title" IS DISTINCT FROM NEW."title") EXECUTE FUNCTION conversation_title_spans_retitle();--> statement-breakpoint
-- the rows written before the triggers (CREATE TRIGGER waited for every transaction writing the table)
INSERT INTO "conversation_title_spans" (trigram, span)
  SELECT d.trigram, d.span FROM (SELECT DISTINCT t AS trigram, substr(c.id, 6, 3) AS span FROM conversations c, unnest(conversation_title_trigrams(c.title)) t) d
  WHERE NOT EXISTS (SELECT FROM conversation_title_spans p WHERE p.trigram = d.trigram AND p.span = d.span);
