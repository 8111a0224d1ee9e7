import { Injectable } from '@nestjs/common';
import { parseId } from '../../libs/ids/ids';
import { ApiError } from '../common/api-error';
import type { Page } from '../common/envelope';
import { Paginator, type PaginationQuery } from '../common/pagination';
import type { ConversationDetailDto, ConversationSummaryDto, MessageDto } from './conversations.dto';
import type { ConversationListRequest } from './conversations.filters';
import { mapConversationDetail, mapConversationSummary, mapMessage } from './conversations.mapper';
import { ConversationsRepository } from './conversations.repository';

@Injectable()
export class ConversationsService {
  constructor(
    private readonly repository: ConversationsRepository,
    private readonly paginator: Paginator,
  ) {}

  async listConversations(orgId: string, request: ConversationListRequest): Promise<Page<ConversationSummaryDto>> {
    const page = this.paginator.pageRequest(request, { cursorNamespace: 'conversations', filters: { ...request.filters } });
    const rows = await this.repository.list(orgId, request.filters, page.afterId, page.fetch);
    return this.paginator.page(rows, page).map(mapConversationSummary);
  }

  async getConversation(orgId: string, rawId: string, includeTriggerPayload: boolean): Promise<ConversationDetailDto> {
    const id = this.conversationId(rawId);
    const row = await this.repository.findById(orgId, id, includeTriggerPayload);
    if (!row) throw ApiError.notFound('Conversation');
    const thread = await this.repository.listAllMessages(orgId, id);
    return mapConversationDetail(row, thread, includeTriggerPayload);
  }

  async listMessages(orgId: string, rawId: string, query: PaginationQuery): Promise<Page<MessageDto>> {
    const id = this.conversationId(rawId);
    // the conversation id is part of the list name, so a cursor of one thread is refused on another
    const page = this.paginator.pageRequest(query, { cursorNamespace: `messages:${id}` });
    const rows = await this.repository.pageMessages(orgId, id, page.afterId, page.fetch);
    if (!rows) throw ApiError.notFound('Conversation');
    return this.paginator.page(rows, page).map(mapMessage);
  }

  private conversationId(raw: string): string {
    const id = parseId('conversation', raw, { allowBare: true });
    if (!id) throw ApiError.notFound('Conversation');
    return id;
  }
}
