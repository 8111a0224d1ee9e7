import { boolean, index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts } from '../database/orgs.table';

export const members = pgTable(
  'members',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    userId: text('user_id').notNull(),
    name: text('name'),
    email: text('email').notNull(),
    role: text('role').notNull(),
    isActive: boolean('is_active').notNull().default(true),
    lastLoginAt: ts('last_login_at'),
    createdAt: createdAt(),
  },
  (t) => [index('members_org_idx').on(t.orgId, t.id), uniqueIndex('members_org_user_unique').on(t.orgId, t.userId)],
);
