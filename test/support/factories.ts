import type { INestApplication } from '@nestjs/common';
import { ApiKeysService } from '../../src/auth/api-keys.service';
import { SCOPES, type Scope } from '../../src/auth/scopes';
import type { OrgLimits } from '../../src/database/orgs.table';
import { OrgsService } from '../../src/orgs/orgs.service';

let counter = 0;

export interface TestOrg {
  orgId: string;
  /** a key with every scope */
  token: string;
  keyId: string;
  /** `Authorization` header value of the full-scope key */
  auth: string;
  /** makes another key of this organization */
  key(scopes: Scope[], options?: { expiresAt?: Date; revoked?: boolean }): Promise<{ id: string; token: string; auth: string }>;
}

/** A fresh organization with a full-scope key: tests never share data and need no cleanup. */
export async function createOrg(
  app: INestApplication,
  options: { name?: string; status?: string; plan?: string; limits?: Partial<OrgLimits> } = {},
): Promise<TestOrg> {
  counter += 1;
  const name = options.name ?? `Test Org ${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
  const orgId = await app.get(OrgsService).upsertOrg({
    name,
    plan: options.plan ?? 'pro',
    status: options.status ?? 'active',
    credits: { total: 1000, used: 10, remaining: 990, top_up: 0, reset_at: null },
    limits: options.limits,
  });
  const keys = app.get(ApiKeysService);
  const key = async (scopes: Scope[], extra: { expiresAt?: Date; revoked?: boolean } = {}) => {
    const created = await keys.create({ orgId, label: 'test', scopes, expiresAt: extra.expiresAt ?? null, revoked: extra.revoked });
    return { id: created.id, token: created.token, auth: `Bearer ${created.token}` };
  };
  const full = await key([...SCOPES]);
  return { orgId, token: full.token, keyId: full.id, auth: full.auth, key };
}
