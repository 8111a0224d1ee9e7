import { Inject, Injectable } from '@nestjs/common';
import { sql } from 'drizzle-orm';
import { DATABASE, type Database } from '../database/database.types';

interface AnalyticsTotalsRow {
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

interface AnalyticsDayRow {
  /** `YYYY-MM-DD` (UTC): the keyset of the daily series */
  id: string;
  conversations: number;
  messages: number;
  creditsUsed: number;
  autonomous: number;
}

type Raw = Record<string, unknown>;
const num = (value: unknown): number => Number(value ?? 0);

/** Analytics are SQL aggregates over the conversations table; rows are never loaded into memory. */
@Injectable()
export class AnalyticsRepository {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /**
   * Totals over [since, until] for one agent, in the same query that proves the
   * agent exists in the organization (null when it does not). A soft-deleted
   * agent keeps its analytics while in the trash, and has none once it was
   * deleted before `trashWindowStart` (whether or not the purge has run yet).
   */
  async totals(orgId: string, agentId: string, since: Date, until: Date, trashWindowStart: Date): Promise<AnalyticsTotalsRow | null> {
    const result = await this.db.execute(sql`
      with windowed as (
        select source, autonomous, is_simulation, message_count, credits_used, ticket_ids
        from conversations
        where org_id = ${orgId} and agent_id = ${agentId} and created_at >= ${since} and created_at <= ${until}
      )
      select
        count(w.*)::int as conversations,
        coalesce(sum(w.message_count), 0)::float8 as messages,
        coalesce(sum(w.credits_used), 0)::float8 as credits_used,
        (count(*) filter (where w.autonomous))::int as autonomous,
        (count(*) filter (where w.is_simulation))::int as simulations,
        (count(*) filter (where w.source = 'dashboard'))::int as dashboard,
        (count(*) filter (where w.source = 'autonomous'))::int as autonomous_source,
        (count(*) filter (where w.source = 'embed'))::int as embed,
        (count(*) filter (where w.source = 'sub-agent'))::int as sub_agent,
        (select count(distinct ticket)::int from windowed, unnest(windowed.ticket_ids) as ticket
          where cardinality(windowed.ticket_ids) > 0) as distinct_tickets
      from agents a
      left join windowed w on true
      where a.org_id = ${orgId} and a.id = ${agentId} and (a.deleted_at is null or a.deleted_at >= ${trashWindowStart})
      group by a.id
    `);
    const row = (result as unknown as { rows: Raw[] }).rows[0];
    if (!row) return null;
    return {
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
    };
  }

  /**
   * Daily series, newest first: UTC days from `fromDay` (inclusive) back to the
   * day of `since`, `fetch` of them, each with the aggregates of the
   * conversations created that day inside [since, until]. Empty days are zeros.
   */
  async daily(orgId: string, agentId: string, since: Date, until: Date, fromDay: string, fetch: number): Promise<AnalyticsDayRow[]> {
    const result = await this.db.execute(sql`
      with days as (
        select d::date as day
        -- timestamp without time zone throughout, so the session's TimeZone cannot shift a day
        from generate_series(${fromDay}::date::timestamp, (${since}::timestamptz at time zone 'UTC')::date::timestamp, interval '-1 day') as d
        limit ${fetch}
      )
      -- one pass over the page's days, grouped by day: a join per day re-read the window once per day
      , counted as (
        select (c.created_at at time zone 'UTC')::date as day,
          count(*)::int as conversations,
          sum(c.message_count)::float8 as messages,
          sum(c.credits_used)::float8 as credits_used,
          (count(*) filter (where c.autonomous))::int as autonomous
        from conversations c
        where c.org_id = ${orgId} and c.agent_id = ${agentId}
          and c.created_at >= ${since} and c.created_at <= ${until}
          and c.created_at >= ((select min(day) from days)::timestamp at time zone 'UTC')
          and c.created_at < (((select max(day) from days) + 1)::timestamp at time zone 'UTC')
        group by 1
      )
      select
        to_char(days.day, 'YYYY-MM-DD') as day,
        coalesce(counted.conversations, 0) as conversations,
        coalesce(counted.messages, 0)::float8 as messages,
        coalesce(counted.credits_used, 0)::float8 as credits_used,
        coalesce(counted.autonomous, 0) as autonomous
      from days
      left join counted on counted.day = days.day
      order by days.day desc
    `);
    return (result as unknown as { rows: Raw[] }).rows.map((row) => ({
      id: String(row.day),
      conversations: num(row.conversations),
      messages: num(row.messages),
      creditsUsed: num(row.credits_used),
      autonomous: num(row.autonomous),
    }));
  }
}
