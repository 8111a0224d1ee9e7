import { boolean, index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, orgId, updatedAt } from '../database/orgs.table';

export interface ConnectorToolRow {
  name: string;
  label?: string;
  description?: string;
  type?: 'read' | 'write';
  requires_confirmation?: boolean;
  disabled?: boolean;
}

export const connectors = pgTable(
  'connectors',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    type: text('type').notNull(),
    name: text('name').notNull(),
    status: text('status').notNull().default('connected'),
    statusReason: text('status_reason'),
    isActive: boolean('is_active').notNull().default(true),
    tools: jsonb('tools').$type<ConnectorToolRow[]>().notNull().default([]),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('connectors_org_idx').on(t.orgId, t.id)],
);
