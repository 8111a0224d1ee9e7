import { Injectable } from '@nestjs/common';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../database/database.types';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { connectors } from '../connectors/connectors.table';
import { sources } from '../database/sources.table';
import { documents } from '../database/sources.table';
import { agents } from './agents.table';

export interface ConnectorRef {
  id: string;
  name: string;
  status: string;
}

export interface AgentRef {
  id: string;
  deletedAt: Date | null;
}

export interface DocumentRef {
  id: string;
  sourceId: string;
}

/**
 * What an agent may reference, looked up inside one organization: one query
 * per referenced table for a whole request, never one per id.
 */
@Injectable()
export class AgentReferencesRepository {
  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {}

  async connectors(orgId: string, ids: string[]): Promise<ConnectorRef[]> {
    if (ids.length === 0) return [];
    return this.txHost.tx
      .select({ id: connectors.id, name: connectors.name, status: connectors.status })
      .from(connectors)
      .where(and(eq(connectors.orgId, orgId), inArray(connectors.id, ids)));
  }

  /** Soft-deleted agents are returned too (with `deletedAt`), so the caller can tell kept references from new ones. */
  async agents(orgId: string, ids: string[]): Promise<AgentRef[]> {
    if (ids.length === 0) return [];
    return this.txHost.tx
      .select({ id: agents.id, deletedAt: agents.deletedAt })
      .from(agents)
      .where(and(eq(agents.orgId, orgId), inArray(agents.id, ids)));
  }

  async sources(orgId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.txHost.tx
      .select({ id: sources.id })
      .from(sources)
      .where(and(eq(sources.orgId, orgId), inArray(sources.id, ids)));
    return rows.map((row) => row.id);
  }

  async documents(orgId: string, ids: string[]): Promise<DocumentRef[]> {
    if (ids.length === 0) return [];
    return this.txHost.tx
      .select({ id: documents.id, sourceId: documents.sourceId })
      .from(documents)
      .where(and(eq(documents.orgId, orgId), inArray(documents.id, ids)));
  }
}

/**
 * Removes every entry matching `match` (a `tools` entry by `name`, a
 * `data_sources` entry by `source_id`) from that list of every agent of the
 * organization, soft-deleted agents included (they may be restored from the
 * trash); the other entries keep their order. Used when the referenced row
 * is deleted, in its transaction. Returns how many agents changed.
 */
export async function removeFromAgentLists(
  db: Database,
  orgId: string,
  list: 'tools' | 'dataSources',
  match: { name: string } | { source_id: string },
): Promise<number> {
  const [[key, value]] = Object.entries(match);
  const column = agents[list];
  const rows = await db
    .update(agents)
    .set({
      [list]: sql`coalesce((select jsonb_agg(ref.value order by ref.ordinality) from jsonb_array_elements(${column}) with ordinality as ref(value, ordinality) where ref.value->>${key}::text is distinct from ${value}::text), '[]'::jsonb)`,
      updatedAt: new Date(),
    })
    .where(and(eq(agents.orgId, orgId), sql`${column} @> ${JSON.stringify([match])}::jsonb`))
    .returning({ id: agents.id });
  return rows.length;
}
