import { Inject, Injectable } from '@nestjs/common';
import { eq, getTableColumns, sql } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import { orgScopedReads } from '../database/org-scoped-reads';
import { chatbots } from '../database/schema';
import type { ChatbotViewRow } from './chatbots.mapper';

export type NewChatbotRow = typeof chatbots.$inferInsert;
const { orgId: _orgId, deactivatedReason: _reason, deactivatedAt: _at, ...viewColumns } = getTableColumns(chatbots);

@Injectable()
export class ChatbotsRepository {
  private readonly reads;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.reads = orgScopedReads(db, chatbots, 'chatbots', { columns: viewColumns });
  }

  findById(orgId: string, id: string): Promise<ChatbotViewRow | null> {
    return this.reads.findById(orgId, id);
  }

  listPage(orgId: string, page: PageRequest): Promise<ChatbotViewRow[]> {
    return this.reads.listPage(orgId, page);
  }

  /** Upsert by id, scoped to the org; returns the ids written. */
  async upsertMany(orgId: string, rows: NewChatbotRow[], tx: DbOrTx = this.db): Promise<string[]> {
    if (rows.length === 0) return [];
    const result = await tx
      .insert(chatbots)
      .values(rows.map((row) => ({ ...row, orgId })))
      .onConflictDoUpdate({
        target: chatbots.id,
        set: {
          publicId: sql`excluded.public_id`,
          name: sql`excluded.name`,
          agentId: sql`excluded.agent_id`,
          isActive: sql`excluded.is_active`,
          allowWriteTools: sql`excluded.allow_write_tools`,
          allowedDomains: sql`excluded.allowed_domains`,
          theme: sql`excluded.theme`,
          welcomeMessage: sql`excluded.welcome_message`,
          createdAt: sql`excluded.created_at`,
          updatedAt: sql`excluded.updated_at`,
        },
        setWhere: eq(chatbots.orgId, orgId),
      })
      .returning({ id: chatbots.id });
    return result.map((row) => row.id);
  }
}
