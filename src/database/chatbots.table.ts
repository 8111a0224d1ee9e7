import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts, updatedAt } from './orgs.table';

/** In src/database/ like the sources table (see there): the agent cascade writes it. */
export const chatbots = pgTable(
  'chatbots',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    publicId: text('public_id').notNull().unique('chatbots_public_id_unique'),
    name: text('name').notNull(),
    agentId: text('agent_id'),
    isActive: boolean('is_active').notNull().default(true),
    allowWriteTools: boolean('allow_write_tools').notNull().default(false),
    allowedDomains: text('allowed_domains').array().notNull().default(sql`'{}'::text[]`),
    theme: jsonb('theme').$type<Record<string, unknown> | null>(),
    welcomeMessage: text('welcome_message'),
    deactivatedReason: text('deactivated_reason'),
    deactivatedAt: ts('deactivated_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('chatbots_org_idx').on(t.orgId, t.id), index('chatbots_org_agent_idx').on(t.orgId, t.agentId)],
);
