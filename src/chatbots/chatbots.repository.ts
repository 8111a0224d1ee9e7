import { Injectable } from '@nestjs/common';
import { getTableColumns } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgScopedReads } from '../database/org-scoped-reads';
import { upsertOrgRows } from '../database/org-scoped-upsert';
import { chatbots } from '../database/chatbots.table';
import type { ChatbotViewRow } from './chatbots.mapper';

export type NewChatbotRow = typeof chatbots.$inferInsert;
const { orgId: _orgId, deactivatedReason: _reason, deactivatedAt: _at, ...viewColumns } = getTableColumns(chatbots);

@Injectable()
export class ChatbotsRepository {
  private readonly reads;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.reads = orgScopedReads(txHost, chatbots, { statementPrefix: 'chatbots', columns: viewColumns });
  }

  findById(orgId: string, id: string): Promise<ChatbotViewRow | null> {
    return this.reads.findById(orgId, id);
  }

  listPage(orgId: string, page: PageRequest): Promise<ChatbotViewRow[]> {
    return this.reads.listPage(orgId, page);
  }

  /** Upsert by id, scoped to the org; returns the ids written. */
  upsertMany(orgId: string, rows: NewChatbotRow[]): Promise<string[]> {
    return upsertOrgRows(this.txHost.tx, chatbots, orgId, rows, ['publicId', 'name', 'agentId', 'isActive', 'allowWriteTools', 'allowedDomains', 'theme', 'welcomeMessage', 'deactivatedReason', 'deactivatedAt', 'createdAt', 'updatedAt']);
  }
}
