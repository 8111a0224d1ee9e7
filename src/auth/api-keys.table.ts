import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, orgId, ts } from '../database/orgs.table';

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    label: text('label').notNull(),
    /** first characters of the secret: narrows the lookup before the hash is compared */
    lookupPrefix: text('lookup_prefix').notNull(),
    /** SHA-256 (hex) of the whole token; the token itself is never stored */
    tokenHash: text('token_hash').notNull(),
    scopes: text('scopes').array().notNull(),
    expiresAt: ts('expires_at'),
    revokedAt: ts('revoked_at'),
    lastUsedAt: ts('last_used_at'),
    createdAt: createdAt(),
  },
  (t) => [index('api_keys_lookup_prefix_idx').on(t.lookupPrefix), index('api_keys_org_idx').on(t.orgId, t.id)],
);
