import { Inject, Injectable } from '@nestjs/common';
import { and, eq, inArray } from 'drizzle-orm';
import { DATABASE, type Database } from '../database/database.types';
import { agents, connectors, documents, sources } from '../database/schema';

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
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  async connectors(orgId: string, ids: string[]): Promise<ConnectorRef[]> {
    if (ids.length === 0) return [];
    return this.db
      .select({ id: connectors.id, name: connectors.name, status: connectors.status })
      .from(connectors)
      .where(and(eq(connectors.orgId, orgId), inArray(connectors.id, ids)));
  }

  /** Soft-deleted agents are returned too (with `deletedAt`), so the caller can tell kept references from new ones. */
  async agents(orgId: string, ids: string[]): Promise<AgentRef[]> {
    if (ids.length === 0) return [];
    return this.db
      .select({ id: agents.id, deletedAt: agents.deletedAt })
      .from(agents)
      .where(and(eq(agents.orgId, orgId), inArray(agents.id, ids)));
  }

  async sources(orgId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .select({ id: sources.id })
      .from(sources)
      .where(and(eq(sources.orgId, orgId), inArray(sources.id, ids)));
    return rows.map((row) => row.id);
  }

  async documents(orgId: string, ids: string[]): Promise<DocumentRef[]> {
    if (ids.length === 0) return [];
    return this.db
      .select({ id: documents.id, sourceId: documents.sourceId })
      .from(documents)
      .where(and(eq(documents.orgId, orgId), inArray(documents.id, ids)));
  }
}
