import { index, integer, json, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts } from '../database/orgs.table';

export const idempotencyRecords = pgTable(
  'idempotency_records',
  {
    orgId: orgId(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    status: integer('status').notNull(),
    /**
     * json, not jsonb: the text exactly as first sent (jsonb reorders object
     * keys), so a replay is the first response byte for byte but its request_id
     */
    body: json('body').notNull(),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.key] }), index('idempotency_records_expires_idx').on(t.expiresAt)],
);
