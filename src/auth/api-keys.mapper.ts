import { iso } from '../common/iso';
import type { ApiKeyRow } from './api-keys.repository';

/** What an operator may see of a key: never the token, its hash or its lookup prefix. */
interface ApiKeyView {
  id: string;
  org_id: string;
  label: string;
  scopes: string[];
  created_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

export function mapApiKey(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    org_id: row.orgId,
    label: row.label,
    scopes: row.scopes,
    created_at: iso(row.createdAt),
    expires_at: iso(row.expiresAt),
    revoked_at: iso(row.revokedAt),
    last_used_at: iso(row.lastUsedAt),
  };
}
