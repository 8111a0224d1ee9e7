import { Injectable } from '@nestjs/common';
import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgs } from '../database/orgs.table';
import { apiKeys } from './api-keys.table';
import { prepareNamed } from '../database/prepared-statements';

export type ApiKeyRow = typeof apiKeys.$inferSelect;
type NewApiKeyRow = typeof apiKeys.$inferInsert;

interface ApiKeyWithOrg {
  id: string;
  orgId: string;
  tokenHash: string;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  orgStatus: string;
  orgPlan: string;
}

@Injectable()
export class ApiKeysRepository {
  /** hot path: prepared once, one round trip per uncached key */
  private readonly byPrefix;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.byPrefix = prepareNamed(txHost, 'api_keys_by_prefix', (db) =>
      db
        .select({
          id: apiKeys.id,
          orgId: apiKeys.orgId,
          tokenHash: apiKeys.tokenHash,
          scopes: apiKeys.scopes,
          expiresAt: apiKeys.expiresAt,
          revokedAt: apiKeys.revokedAt,
          orgStatus: orgs.status,
          orgPlan: orgs.plan,
        })
        .from(apiKeys)
        .innerJoin(orgs, eq(orgs.id, apiKeys.orgId))
        .where(eq(apiKeys.lookupPrefix, sql.placeholder('prefix'))),
    );
  }

  /** Lookup across organizations: the key is what tells us the organization. */
  findCandidatesByPrefix(prefix: string): Promise<ApiKeyWithOrg[]> {
    return this.byPrefix.execute({ prefix });
  }

  /** False when the id is a key of another organization (left untouched). */
  async upsert(row: NewApiKeyRow): Promise<boolean> {
    const written = await this.txHost.tx
      .insert(apiKeys)
      .values(row)
      .onConflictDoUpdate({
        target: apiKeys.id,
        set: {
          label: row.label,
          lookupPrefix: row.lookupPrefix,
          tokenHash: row.tokenHash,
          scopes: row.scopes,
          expiresAt: row.expiresAt ?? null,
          revokedAt: row.revokedAt ?? null,
        },
        // an id is never moved to another organization by an upsert
        setWhere: eq(apiKeys.orgId, row.orgId),
      })
      .returning({ id: apiKeys.id });
    return written.length > 0;
  }

  listByOrg(orgId: string): Promise<ApiKeyRow[]> {
    return this.txHost.tx.select().from(apiKeys).where(eq(apiKeys.orgId, orgId)).orderBy(desc(apiKeys.id));
  }

  async revoke(keyId: string, at: Date): Promise<ApiKeyRow | null> {
    const [row] = await this.txHost.tx
      .update(apiKeys)
      .set({ revokedAt: at })
      .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
      .returning();
    if (row) return row;
    const [existing] = await this.txHost.tx.select().from(apiKeys).where(eq(apiKeys.id, keyId));
    return existing ?? null;
  }

  /** One statement for a whole batch of last-used times; never moves a time backwards. */
  async recordLastUsed(entries: Array<[keyId: string, at: Date]>): Promise<void> {
    if (entries.length === 0) return;
    const ids = entries.map(([id]) => id);
    const times = entries.map(([, at]) => at.toISOString());
    await this.txHost.tx.execute(sql`
      update ${apiKeys} set last_used_at = v.at
      from (select unnest(${sql.param(ids)}::text[]) as id, unnest(${sql.param(times)}::timestamptz[]) as at) as v
      where ${apiKeys.id} = v.id and (${apiKeys.lastUsedAt} is null or ${apiKeys.lastUsedAt} < v.at)`);
  }
}
