import { bigint, date, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { orgId } from '../database/orgs.table';

/*
 * Agent analytics rollups, written only by triggers on `conversations` (the
 * `agent_usage_rollup` migration defines them), so that every write path keeps them exact, set-based
 * seeding included. Keys are UTC days of `created_at`; conversations without an
 * agent are not counted.
 */

/** per agent and UTC day: the sums the analytics totals and daily series add up */
export const agentDailyUsage = pgTable(
  'agent_daily_usage',
  {
    orgId: orgId(),
    agentId: text('agent_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    conversations: integer('conversations').notNull(),
    messages: bigint('messages', { mode: 'number' }).notNull(),
    creditsUsed: bigint('credits_used', { mode: 'number' }).notNull(),
    autonomous: integer('autonomous').notNull(),
    simulations: integer('simulations').notNull(),
    dashboard: integer('dashboard').notNull(),
    autonomousSource: integer('autonomous_source').notNull(),
    embed: integer('embed').notNull(),
    subAgent: integer('sub_agent').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.day] })],
);

/** per agent, ticket id and UTC day: how many conversations about that ticket the agent had that day */
export const agentTicketDays = pgTable(
  'agent_ticket_days',
  {
    orgId: orgId(),
    agentId: text('agent_id').notNull(),
    ticket: text('ticket').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    conversations: integer('conversations').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.ticket, t.day] })],
);

/**
 * per agent and UTC day: how many of that day's tickets the agent last saw on
 * `previous_day` (`-infinity`: never before). The distinct tickets of whole
 * days [a, b) are the sum over those days with `previous_day < a`: each ticket
 * counts once, on its first day inside the range.
 */
export const agentDailyTickets = pgTable(
  'agent_daily_tickets',
  {
    orgId: orgId(),
    agentId: text('agent_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    previousDay: date('previous_day', { mode: 'string' }).notNull(),
    tickets: integer('tickets').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.day, t.previousDay] })],
);
