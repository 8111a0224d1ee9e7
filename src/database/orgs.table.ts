import { jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * One schema for both engines (PGlite and a PostgreSQL server). Ids are
 * `<prefix>_<24 hex>` with a timestamp first, so `ORDER BY id DESC` is
 * newest-first and every list index is `(org_id, …, id)`.
 *
 * Every table that belongs to an organization carries `org_id` with a
 * cascading foreign key; repositories filter on it in every query.
 *
 * Each table lives in the folder of the module that owns it, in a
 * `*.table.ts` file that drizzle-kit reads by glob (drizzle.config.ts); this
 * one holds what every table shares: the column helpers and `orgs`, which
 * every `org_id` references.
 */

export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
export const createdAt = () => ts('created_at').notNull().defaultNow();
export const updatedAt = () => ts('updated_at').notNull().defaultNow();
export const orgId = () =>
  text('org_id')
    .notNull()
    .references(() => orgs.id, { onDelete: 'cascade' });

export interface OrgCredits {
  total: number;
  used: number;
  remaining: number;
  top_up: number;
  reset_at: string | null;
}

export interface OrgLimits {
  agents: number | null;
  connectors: number | null;
  sources: number | null;
  chatbots: number | null;
  scheduled_triggers: number | null;
  custom_tool_slots: number | null;
}

export interface OrgTrial {
  start_date: string | null;
  end_date: string | null;
}

export const orgs = pgTable('orgs', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  slug: text('slug').notNull().unique('orgs_slug_unique'),
  plan: text('plan').notNull(),
  status: text('status').notNull().default('active'),
  credits: jsonb('credits').$type<OrgCredits>().notNull(),
  limits: jsonb('limits').$type<OrgLimits>().notNull(),
  trial: jsonb('trial').$type<OrgTrial | null>(),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});
