-- online migration: every statement runs on its own, outside a transaction (src/database/migration-runner.ts), because the backfill at the end commits once per agent instead of holding one transaction over millions of conversations.
--
-- Agent analytics read per-agent, per-UTC-day rollups instead of aggregating every conversation of the window. The database keeps them: statement-level triggers on conversations with transition tables see every insert, update (ON CONFLICT DO UPDATE included), delete and cascade, whichever path wrote them (the fixture loader, set-based seeding, an organization deleted).
CREATE TABLE IF NOT EXISTS "agent_daily_usage" (
	"org_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"day" date NOT NULL,
	"conversations" integer NOT NULL,
	"messages" bigint NOT NULL,
	"credits_used" bigint NOT NULL,
	"autonomous" integer NOT NULL,
	"simulations" integer NOT NULL,
	"dashboard" integer NOT NULL,
	"autonomous_source" integer NOT NULL,
	"embed" integer NOT NULL,
	"sub_agent" integer NOT NULL,
	CONSTRAINT "agent_daily_usage_org_id_agent_id_day_pk" PRIMARY KEY("org_id","agent_id","day"),
	CONSTRAINT "agent_daily_usage_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "agent_ticket_days" (
	"org_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"ticket" text NOT NULL,
	"day" date NOT NULL,
	"conversations" integer NOT NULL,
	CONSTRAINT "agent_ticket_days_org_id_agent_id_ticket_day_pk" PRIMARY KEY("org_id","agent_id","ticket","day"),
	CONSTRAINT "agent_ticket_days_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
-- distinct tickets do not add up across days: each (day, previous day the agent saw the ticket) pair is counted, so that a range of whole days [a, b) has sum(tickets) where previous_day < a ('-infinity' when never before) distinct tickets
CREATE TABLE IF NOT EXISTS "agent_daily_tickets" (
	"org_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"day" date NOT NULL,
	"previous_day" date NOT NULL,
	"tickets" integer NOT NULL,
	CONSTRAINT "agent_daily_tickets_org_id_agent_id_day_previous_day_pk" PRIMARY KEY("org_id","agent_id","day","previous_day"),
	CONSTRAINT "agent_daily_tickets_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action
);
--> statement-breakpoint
-- Applies one statement's changed conversations as signed deltas. Every step is set-based over the transition tables (dynamic SQL sees them too), so a 10 M-row INSERT … SELECT costs a few grouped passes, not a trigger call per row.
-- A writer holds a shared advisory lock per (organization, agent) it changed until it commits; the recount below takes it exclusively, so a recount never misses nor double-counts a concurrent write. The pairs share 1,024 locks (hash buckets): a statement that changes the conversations of any number of agents holds at most that many, well inside the lock table.
-- Deltas of an organization being deleted are dropped: its rollup rows go by the cascade.
CREATE OR REPLACE FUNCTION "conversations_usage_rollup"() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  counted CONSTANT text := 'org_id, agent_id, (created_at AT TIME ZONE ''UTC'')::date AS day, message_count, credits_used, autonomous, is_simulation, source, ticket_ids';
  changed text;
  tickets text;
  ticket_keys text;
  has_tickets boolean;
BEGIN
  IF TG_OP = 'INSERT' THEN
    changed := format('SELECT 1 AS sign, %s FROM new_rows WHERE agent_id IS NOT NULL', counted);
  ELSIF TG_OP = 'DELETE' THEN
    changed := format('SELECT -1 AS sign, %s FROM old_rows WHERE agent_id IS NOT NULL', counted);
  ELSE
    -- only the rows whose counted columns changed: a fixture reload that rewrites a row as it was costs nothing
    changed := format(
      'SELECT -1 AS sign, %1$s FROM old_rows o WHERE agent_id IS NOT NULL AND NOT EXISTS (SELECT FROM new_rows n WHERE n.id = o.id AND %2$s)
       UNION ALL SELECT 1 AS sign, %1$s FROM new_rows n WHERE agent_id IS NOT NULL AND NOT EXISTS (SELECT FROM old_rows o WHERE o.id = n.id AND %2$s)',
      counted,
      '(n.org_id, n.agent_id, n.created_at, n.message_count, n.credits_used, n.autonomous, n.is_simulation, n.source, n.ticket_ids) IS NOT DISTINCT FROM (o.org_id, o.agent_id, o.created_at, o.message_count, o.credits_used, o.autonomous, o.is_simulation, o.source, o.ticket_ids)');
  END IF;

  EXECUTE format('SELECT count(pg_advisory_xact_lock_shared(hashtext(''conversations_usage''), bucket)) FROM (SELECT DISTINCT hashtext(org_id || ''/'' || agent_id) & 1023 AS bucket FROM (%s) c) k', changed);

  EXECUTE format($q$
    INSERT INTO agent_daily_usage AS u (org_id, agent_id, day, conversations, messages, credits_used, autonomous, simulations, dashboard, autonomous_source, embed, sub_agent)
    SELECT org_id, agent_id, day, sum(sign), sum(sign * message_count), sum(sign * credits_used),
      coalesce(sum(sign) FILTER (WHERE autonomous), 0), coalesce(sum(sign) FILTER (WHERE is_simulation), 0),
      coalesce(sum(sign) FILTER (WHERE source = 'dashboard'), 0), coalesce(sum(sign) FILTER (WHERE source = 'autonomous'), 0),
      coalesce(sum(sign) FILTER (WHERE source = 'embed'), 0), coalesce(sum(sign) FILTER (WHERE source = 'sub-agent'), 0)
    FROM (%s) c
    GROUP BY org_id, agent_id, day
    HAVING EXISTS (SELECT FROM orgs WHERE orgs.id = c.org_id)
    ON CONFLICT (org_id, agent_id, day) DO UPDATE SET
      conversations = u.conversations + excluded.conversations, messages = u.messages + excluded.messages,
      credits_used = u.credits_used + excluded.credits_used, autonomous = u.autonomous + excluded.autonomous,
      simulations = u.simulations + excluded.simulations, dashboard = u.dashboard + excluded.dashboard,
      autonomous_source = u.autonomous_source + excluded.autonomous_source, embed = u.embed + excluded.embed, sub_agent = u.sub_agent + excluded.sub_agent
  $q$, changed);
  IF TG_OP <> 'INSERT' THEN
    EXECUTE format('DELETE FROM agent_daily_usage u USING (SELECT DISTINCT org_id, agent_id, day FROM (%s) c) k
      WHERE u.org_id = k.org_id AND u.agent_id = k.agent_id AND u.day = k.day AND u.conversations = 0', changed);
  END IF;

  -- a conversation counts once per distinct ticket id it carries
  tickets := format('SELECT c.sign, c.org_id, c.agent_id, c.day, t.ticket FROM (%s) c CROSS JOIN LATERAL (SELECT DISTINCT x AS ticket FROM unnest(c.ticket_ids) x WHERE x IS NOT NULL) t', changed);
  EXECUTE format('SELECT EXISTS (%s)', tickets) INTO has_tickets;
  IF NOT has_tickets THEN
    RETURN NULL;
  END IF;
  ticket_keys := format('SELECT DISTINCT org_id, agent_id, ticket FROM (%s) tc', tickets);
  -- the changed tickets' (day, previous day) pairs come out before their days change and go back in after
  EXECUTE conversations_usage_ticket_pairs_sql(ticket_keys, -1);
  EXECUTE format($q$
    INSERT INTO agent_ticket_days AS d (org_id, agent_id, ticket, day, conversations)
    SELECT org_id, agent_id, ticket, day, sum(sign) FROM (%s) tc
    GROUP BY org_id, agent_id, ticket, day
    HAVING EXISTS (SELECT FROM orgs WHERE orgs.id = tc.org_id)
    ON CONFLICT (org_id, agent_id, ticket, day) DO UPDATE SET conversations = d.conversations + excluded.conversations
  $q$, tickets);
  IF TG_OP <> 'INSERT' THEN
    EXECUTE format('DELETE FROM agent_ticket_days d USING (SELECT DISTINCT org_id, agent_id, ticket, day FROM (%s) tc) k
      WHERE d.org_id = k.org_id AND d.agent_id = k.agent_id AND d.ticket = k.ticket AND d.day = k.day AND d.conversations = 0', tickets);
  END IF;
  EXECUTE conversations_usage_ticket_pairs_sql(ticket_keys, 1);
  EXECUTE format('DELETE FROM agent_daily_tickets p USING (SELECT DISTINCT org_id, agent_id FROM (%s) tc) k
    WHERE p.org_id = k.org_id AND p.agent_id = k.agent_id AND p.tickets = 0', tickets);
  RETURN NULL;
END
$fn$;
--> statement-breakpoint
-- The statement that adds (sign 1) or removes (-1) the (day, previous day) pairs of the tickets `ticket_keys` selects (org_id, agent_id, ticket), as agent_ticket_days holds them now.
CREATE OR REPLACE FUNCTION "conversations_usage_ticket_pairs_sql"(ticket_keys text, sign integer) RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT format($q$
    INSERT INTO agent_daily_tickets AS p (org_id, agent_id, day, previous_day, tickets)
    SELECT org_id, agent_id, day, previous_day, %2$s * count(*) FROM (
      SELECT d.org_id, d.agent_id, d.day, coalesce(lag(d.day) OVER (PARTITION BY d.org_id, d.agent_id, d.ticket ORDER BY d.day), '-infinity') AS previous_day
      FROM agent_ticket_days d JOIN (%1$s) k ON k.org_id = d.org_id AND k.agent_id = d.agent_id AND k.ticket = d.ticket
    ) s
    GROUP BY org_id, agent_id, day, previous_day
    HAVING EXISTS (SELECT FROM orgs WHERE orgs.id = s.org_id)
    ON CONFLICT (org_id, agent_id, day, previous_day) DO UPDATE SET tickets = p.tickets + excluded.tickets
  $q$, ticket_keys, sign)
$fn$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "conversations_usage_truncate"() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  TRUNCATE agent_daily_usage, agent_ticket_days, agent_daily_tickets;
  RETURN NULL;
END
$fn$;
--> statement-breakpoint
-- Counts one agent's rollup rows again from its conversations, under the exclusive side of the writers' advisory lock: the backfill below, and a repair if a rollup is ever in doubt.
CREATE OR REPLACE FUNCTION "conversations_usage_recount"(p_org text, p_agent text) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('conversations_usage'), hashtext(p_org || '/' || p_agent) & 1023);
  DELETE FROM agent_daily_usage WHERE org_id = p_org AND agent_id = p_agent;
  INSERT INTO agent_daily_usage (org_id, agent_id, day, conversations, messages, credits_used, autonomous, simulations, dashboard, autonomous_source, embed, sub_agent)
  SELECT p_org, p_agent, (created_at AT TIME ZONE 'UTC')::date, count(*), sum(message_count), sum(credits_used),
    count(*) FILTER (WHERE autonomous), count(*) FILTER (WHERE is_simulation),
    count(*) FILTER (WHERE source = 'dashboard'), count(*) FILTER (WHERE source = 'autonomous'),
    count(*) FILTER (WHERE source = 'embed'), count(*) FILTER (WHERE source = 'sub-agent')
  FROM conversations WHERE org_id = p_org AND agent_id = p_agent
  GROUP BY 3;
  DELETE FROM agent_ticket_days WHERE org_id = p_org AND agent_id = p_agent;
  INSERT INTO agent_ticket_days (org_id, agent_id, ticket, day, conversations)
  SELECT p_org, p_agent, t.ticket, (c.created_at AT TIME ZONE 'UTC')::date, count(*)
  FROM conversations c CROSS JOIN LATERAL (SELECT DISTINCT x AS ticket FROM unnest(c.ticket_ids) x WHERE x IS NOT NULL) t
  WHERE c.org_id = p_org AND c.agent_id = p_agent
  GROUP BY 3, 4;
  DELETE FROM agent_daily_tickets WHERE org_id = p_org AND agent_id = p_agent;
  INSERT INTO agent_daily_tickets (org_id, agent_id, day, previous_day, tickets)
  SELECT p_org, p_agent, day, previous_day, count(*) FROM (
    SELECT day, coalesce(lag(day) OVER (PARTITION BY ticket ORDER BY day), '-infinity') AS previous_day
    FROM agent_ticket_days WHERE org_id = p_org AND agent_id = p_agent
  ) s
  GROUP BY day, previous_day;
END
$fn$;
--> statement-breakpoint
-- One transaction per agent: writes to the agent being counted wait for it (the busiest agent of a 10 M-row organization: seconds), every other write goes on.
CREATE OR REPLACE PROCEDURE "conversations_usage_backfill"() LANGUAGE plpgsql AS $fn$
DECLARE
  pair record;
BEGIN
  FOR pair IN SELECT DISTINCT org_id, agent_id FROM conversations WHERE agent_id IS NOT NULL LOOP
    PERFORM conversations_usage_recount(pair.org_id, pair.agent_id);
    COMMIT;
  END LOOP;
END
$fn$;
--> statement-breakpoint
CREATE OR REPLACE TRIGGER "conversations_usage_insert" AFTER INSERT ON "conversations" REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conversations_usage_rollup();--> statement-breakpoint
CREATE OR REPLACE TRIGGER "conversations_usage_update" AFTER UPDATE ON "conversations" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conversations_usage_rollup();--> statement-breakpoint
CREATE OR REPLACE TRIGGER "conversations_usage_delete" AFTER DELETE ON "conversations" REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION conversations_usage_rollup();--> statement-breakpoint
CREATE OR REPLACE TRIGGER "conversations_usage_truncate" AFTER TRUNCATE ON "conversations" FOR EACH STATEMENT EXECUTE FUNCTION conversations_usage_truncate();--> statement-breakpoint
-- After the triggers: every conversation written from here on is counted by them, every older one by the recount of its agent (which replaces whatever the triggers added to that agent before it ran, so nothing counts twice).
CALL conversations_usage_backfill();
