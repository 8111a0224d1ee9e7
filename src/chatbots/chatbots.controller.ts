import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import type { Page } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { PaginationQuery } from '../common/pagination';
import type { AuthContext } from '../common/request-context';
import { ChatbotDto } from './chatbots.dto';
import { ChatbotsService } from './chatbots.service';
import { idPattern } from '../common/input-bounds';
import { CHATBOT_ID } from './chatbots.ids';

@ApiTags('Chatbots')
@Controller('chatbots')
export class ChatbotsController {
  constructor(private readonly chatbots: ChatbotsService) {}

  @Get()
  @RequireScope('chatbots:read')
  @ApiOperation({ operationId: 'listChatbots', summary: 'Chatbots (embeddable widget configurations), newest first' })
  @ApiEnvelope(ChatbotDto, { list: true })
  @ApiErrors(422)
  listChatbots(@Auth() auth: AuthContext, @Query() query: PaginationQuery): Promise<Page<ChatbotDto>> {
    return this.chatbots.listChatbots(auth.orgId, query);
  }

  @Get(':id')
  @RequireScope('chatbots:read')
  @ApiOperation({ operationId: 'getChatbot', summary: 'One chatbot' })
  @ApiParam({ name: 'id', description: '`chatbot_<24 hex>`', schema: { type: 'string', pattern: idPattern(CHATBOT_ID) } })
  @ApiEnvelope(ChatbotDto)
  @ApiErrors(404)
  getChatbot(@Auth() auth: AuthContext, @Param('id') id: string): Promise<ChatbotDto> {
    return this.chatbots.getChatbot(auth.orgId, id);
  }
}
