import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts, updatedAt } from './orgs.table';

/*
 * Here rather than in src/sources/, like the chatbots and triggers tables:
 * a table another folder reads or writes lives below both, so neither
 * imports the other. The upload source is created with its organization
 * (OrgsRepository), the agent references check documents.
 */
export const sources = pgTable(
  'sources',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    type: text('type').notNull(),
    name: text('name').notNull(),
    connectorId: text('connector_id'),
    connectorType: text('connector_type'),
    syncStatus: text('sync_status').notNull().default('ready'),
    lastSyncAt: ts('last_sync_at'),
    documentCount: integer('document_count'),
    isActive: boolean('is_active').notNull().default(true),
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('sources_org_idx').on(t.orgId, t.id),
    // the upload source is a per-organization singleton
    uniqueIndex('sources_org_upload_unique').on(t.orgId).where(sql`${t.type} = 'upload'`),
  ],
);

export const documents = pgTable(
  'documents',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    sourceId: text('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('documents_source_idx').on(t.orgId, t.sourceId, t.id)],
);
