import { pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from '../database/orgs.table';

/**
 * The seed files the server applied at start-up, one row per file content
 * (SHA-256 of its bytes). Written in the transaction that wrote the file's
 * rows, so a crash cannot record a file without its rows; the primary key is
 * what lets instances starting together apply one content once. Not an
 * organization's: a seed file spans organizations, and no tenant reads it.
 */
export const seedApplications = pgTable('seed_applications', {
  contentSha256: text('content_sha256').primaryKey(),
  appliedAt: ts('applied_at').notNull().defaultNow(),
});
