import { Injectable } from '@nestjs/common';
import { sql, type SQL } from 'drizzle-orm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { executeRows } from '../database/execute-rows';

export interface AnalyticsTotalsRow {
  conversations: number;
  messages: number;
  creditsUsed: number;
  autonomous: number;
  simulations: number;
  dashboard: number;
  autonomousSource: number;
  embed: number;
  subAgent: number;
  distinctTickets: number;
}

export interface AnalyticsDayRow {
  /** `YYYY-MM-DD` (UTC): the keyset of the daily series */
  id: string;
  conversations: number;
  messages: number;
  creditsUsed: number;
  autonomous: number;
}

type Raw = Record<string, unknown>;
const num = (value: unknown): number => Number(value ?? 0);
const DAY_MS = 24 * 60 * 60 * 1000;
const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * A window cut into the whole UTC days inside it, [first, end), answered from
 * the per-day rollups, and the partial days at its two ends (at most a day
 * each), answered from the conversations themselves.
 */
interface WindowParts {
  /** `YYYY-MM-DD`s of the whole days, or null when the window holds none */
  whole: { first: string; end: string; firstAt: Date; endAt: Date } | null;
  since: Date;
  until: Date;
}

function windowParts(since: Date, until: Date): WindowParts {
  const firstAt = Math.ceil(since.getTime() / DAY_MS) * DAY_MS;
  const endAt = Math.floor(until.getTime() / DAY_MS) * DAY_MS;
  const whole = firstAt < endAt ? { first: utcDay(firstAt), end: utcDay(endAt), firstAt: new Date(firstAt), endAt: new Date(endAt) } : null;
  return { whole, since, until };
}

/**
 * Analytics are SQL aggregates; rows are never loaded into memory. Whole days
 * come from the rollups the database keeps beside the conversations table
 * (the `agent_usage_rollup` migration: triggers on every write), so a year costs 365 rows per
 * rollup, not every conversation of the year; the partial days at the window's
 * ends are read from the conversations.
 */
@Injectable()
export class AnalyticsRepository {
  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {}

  /** The agent's conversations in the window's partial days (created_at index ranges; none inside the whole days). */
  private edgeRows(orgId: string, agentId: string, parts: WindowParts): SQL {
    const columns = sql`select source, autonomous, is_simulation, message_count, credits_used, ticket_ids, created_at from conversations
      where org_id = ${orgId} and agent_id = ${agentId}`;
    if (!parts.whole) return sql`${columns} and created_at >= ${parts.since} and created_at <= ${parts.until}`;
    return sql`${columns} and created_at >= ${parts.since} and created_at < ${parts.whole.firstAt}
      union all ${columns} and created_at >= ${parts.whole.endAt} and created_at <= ${parts.until}`;
  }

  /** The whole days' condition on a rollup's `day` column. */
  private wholeDays(parts: WindowParts, column: SQL): SQL {
    return parts.whole ? sql`${column} >= ${parts.whole.first}::date and ${column} < ${parts.whole.end}::date` : sql`false`;
  }

  /**
   * One agent's usage over [since, until] in one statement, which also proves
   * the agent exists in the organization (null when it does not): the totals,
   * and a page of the daily series, newest first: `fetch` UTC days from
   * `fromDay` (inclusive) back to the day of `since`, each with the aggregates
   * of the conversations created that day inside the window (empty days are
   * zeros). A soft-deleted agent keeps its analytics while in the trash, and
   * has none once it was deleted before `trashWindowStart` (whether or not the
   * purge has run yet).
   *
   * Distinct tickets: those of the whole days (each counted on its first day
   * there, see agent_daily_tickets), plus those of the partial days that the
   * whole days do not have.
   */
  async agentUsage(
    orgId: string,
    agentId: string,
    window: { since: Date; until: Date; trashWindowStart: Date },
    page: { fromDay: string; fetch: number },
  ): Promise<{ totals: AnalyticsTotalsRow; days: AnalyticsDayRow[] } | null> {
    const { since, until } = window;
    const parts = windowParts(since, until);
    const whole = (column: SQL) => this.wholeDays(parts, column);
    const [row] = await executeRows<Raw>(this.txHost.tx, sql`
      with edge as (${this.edgeRows(orgId, agentId, parts)}),
      sums as (
        select count(*) as conversations, sum(message_count) as messages, sum(credits_used) as credits_used,
          count(*) filter (where autonomous) as autonomous, count(*) filter (where is_simulation) as simulations,
          count(*) filter (where source = 'dashboard') as dashboard, count(*) filter (where source = 'autonomous') as autonomous_source,
          count(*) filter (where source = 'embed') as embed, count(*) filter (where source = 'sub-agent') as sub_agent
        from edge
        union all
        select sum(conversations), sum(messages), sum(credits_used), sum(autonomous), sum(simulations),
          sum(dashboard), sum(autonomous_source), sum(embed), sum(sub_agent)
        from agent_daily_usage
        where org_id = ${orgId} and agent_id = ${agentId} and ${whole(sql`day`)}
      ),
      days as (
        select d::date as day
        -- timestamp without time zone throughout, so the session's TimeZone cannot shift a day
        from generate_series(${page.fromDay}::date::timestamp, (${since}::timestamptz at time zone 'UTC')::date::timestamp, interval '-1 day') as d
        limit ${page.fetch}
      ),
      counted as (
        select day, sum(conversations) as conversations, sum(messages) as messages, sum(credits_used) as credits_used, sum(autonomous) as autonomous
        from (
          select day, conversations, messages, credits_used, autonomous from agent_daily_usage
          where org_id = ${orgId} and agent_id = ${agentId} and ${whole(sql`day`)}
            and day >= (select min(day) from days) and day <= (select max(day) from days)
          union all
          select (created_at at time zone 'UTC')::date, 1, message_count, credits_used, autonomous::int from edge
        ) u
        group by day
      ),
      series as (
        select to_char(days.day, 'YYYY-MM-DD') as day, coalesce(counted.conversations, 0)::int as conversations,
          coalesce(counted.messages, 0)::float8 as messages, coalesce(counted.credits_used, 0)::float8 as credits_used,
          coalesce(counted.autonomous, 0)::int as autonomous
        from days
        left join counted on counted.day = days.day
      )
      select
        coalesce(sum(s.conversations), 0)::int as conversations,
        coalesce(sum(s.messages), 0)::float8 as messages,
        coalesce(sum(s.credits_used), 0)::float8 as credits_used,
        coalesce(sum(s.autonomous), 0)::int as autonomous,
        coalesce(sum(s.simulations), 0)::int as simulations,
        coalesce(sum(s.dashboard), 0)::int as dashboard,
        coalesce(sum(s.autonomous_source), 0)::int as autonomous_source,
        coalesce(sum(s.embed), 0)::int as embed,
        coalesce(sum(s.sub_agent), 0)::int as sub_agent,
        ((select coalesce(sum(tickets), 0) from agent_daily_tickets
            where org_id = ${orgId} and agent_id = ${agentId} and ${whole(sql`day`)} and previous_day < ${parts.whole?.first ?? null}::date)
          + (select count(*) from (select distinct ticket from edge, unnest(edge.ticket_ids) as ticket where ticket is not null) e
            where not exists (select from agent_ticket_days d
              where d.org_id = ${orgId} and d.agent_id = ${agentId} and d.ticket = e.ticket and ${whole(sql`d.day`)}))
        )::int as distinct_tickets,
        (select coalesce(json_agg(json_build_array(day, conversations, messages, credits_used, autonomous) order by day desc), '[]'::json) from series) as days
      from agents a
      cross join sums s
      where a.org_id = ${orgId} and a.id = ${agentId} and (a.deleted_at is null or a.deleted_at >= ${window.trashWindowStart})
      group by a.id
    `);
    if (!row) return null;
    const days = (typeof row.days === 'string' ? JSON.parse(row.days) : row.days) as Array<[string, number, number, number, number]>;
    return {
      totals: {
        conversations: num(row.conversations),
        messages: num(row.messages),
        creditsUsed: num(row.credits_used),
        autonomous: num(row.autonomous),
        simulations: num(row.simulations),
        dashboard: num(row.dashboard),
        autonomousSource: num(row.autonomous_source),
        embed: num(row.embed),
        subAgent: num(row.sub_agent),
        distinctTickets: num(row.distinct_tickets),
      },
      days: days.map(([id, conversations, messages, creditsUsed, autonomous]) => ({
        id,
        conversations: num(conversations),
        messages: num(messages),
        creditsUsed: num(creditsUsed),
        autonomous: num(autonomous),
      })),
    };
  }
}
