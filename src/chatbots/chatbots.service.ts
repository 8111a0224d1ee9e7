import { Injectable } from '@nestjs/common';
import { parseId } from '../../libs/ids/ids';
import { ApiError } from '../common/api-error';
import type { Page } from '../common/envelope';
import { Paginator, type PaginationQuery } from '../common/pagination';
import type { ChatbotDto } from './chatbots.dto';
import { mapChatbot } from './chatbots.mapper';
import { ChatbotsRepository } from './chatbots.repository';
import { CHATBOT_ID } from './chatbots.ids';

@Injectable()
export class ChatbotsService {
  constructor(
    private readonly repository: ChatbotsRepository,
    private readonly paginator: Paginator,
  ) {}

  async listChatbots(orgId: string, query: PaginationQuery): Promise<Page<ChatbotDto>> {
    const page = this.paginator.pageRequest(query, { cursorNamespace: 'chatbots' });
    const rows = await this.repository.listPage(orgId, page);
    return this.paginator.page(rows, page).map(mapChatbot);
  }

  async getChatbot(orgId: string, rawId: string): Promise<ChatbotDto> {
    // chatbot path ids are `chatbot_<24 hex>` only
    const id = parseId(CHATBOT_ID, rawId);
    const row = id ? await this.repository.findById(orgId, id) : null;
    if (!row) throw ApiError.notFound('Chatbot');
    return mapChatbot(row);
  }
}
