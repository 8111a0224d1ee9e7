-- online migration: every statement runs on its own, outside a transaction (src/database/migration-runner.ts); ALTER … SET STATISTICS and ANALYZE take a lock that reads and writes do not wait for.
--
-- How many conversations an agent has, for the planner. At the default target (100) the agent column's most common values stop at the 100th agent of the table; every other agent is estimated at the average of the rest, which at 10 M rows in one organization was 926 rows for an agent with 15,424. Beside `last_message_after` the planner then walked all of that agent's rows, newest first, filtering the time (15,424 heap pages, 20-110 ms), where the last-message index answers in 3-6 ms. At 300 the list holds the 300 most common agents. ANALYZE samples 300 × the largest target rows, and the title trigram statistics (migration 0014) already sample 90,000, so the wider list costs no more sampling: ANALYZE took 12-16 s at 15.5 M rows at either target.
ALTER TABLE "conversations" ALTER COLUMN "agent_id" SET STATISTICS 300;--> statement-breakpoint
-- the wider list exists from the next ANALYZE: autovacuum's would wait for a tenth of the table to change
ANALYZE "conversations";
