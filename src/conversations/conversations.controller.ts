import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiExtension, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import type { Page } from '../common/envelope';
import { BOUNDS, idPattern } from '../common/input-bounds';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { PaginationQuery } from '../common/pagination';
import type { AuthContext } from '../common/request-context';
import { CONVERSATION_SOURCES, ConversationDetailDto, ConversationDetailQuery, ConversationListQuery, ConversationSummaryDto, MessageDto } from './conversations.dto';
import { ConversationListQueryPipe, type ConversationListRequest } from './conversations.filters';
import { ConversationsService } from './conversations.service';

/** `source`, with its values: Swagger drops a property's enum when it spreads a query class into parameters */
const SOURCE_QUERY = {
  name: 'source',
  required: false,
  enum: CONVERSATION_SOURCES,
  description: 'Sub-agent runs are returned only when `source=sub-agent` is passed.',
};

const CONVERSATION_ID = {
  name: 'id',
  description: '`conv_<24 hex>` or the bare 24-hex id',
  schema: { type: 'string' as const, pattern: idPattern('conversation', { allowBare: true }) },
};

@ApiTags('Conversations')
@Controller('conversations')
export class ConversationsController {
  constructor(private readonly conversations: ConversationsService) {}

  @Get()
  @RequireScope('conversations:read')
  @ApiOperation({
    operationId: 'listConversations',
    summary: 'Conversations, newest first, with filters',
    // not a parameter of the document: a generator without `style: deepObject` would send `?ticketId=123`, which is
    // no filter at all (unknown parameters are ignored) and answers the unfiltered list; as prose, such a generator
    // cannot send it wrong, and a client that wants it writes the brackets
    description:
      '**Metadata filter** `metadata[KEY]=VALUE`: exact match on the key `KEY` of `metadata`, in bracket notation ' +
      '(`metadata[ticketId]=123`; the brackets may be percent-encoded), several keys AND-ed. ' +
      `At most ${BOUNDS.metadataKeys} keys of at most ${BOUNDS.metadataKey} characters, values of at most ${BOUNDS.metadataValue}. ` +
      'Keys starting with `$` or containing a dot are rejected (422), and so is a parameter that starts with `metadata[` but is not of this form ' +
      '(a missing `]`, say), rather than ignored as unknown. It is described here rather than as a `deepObject` parameter, ' +
      'which many generators send as `KEY=VALUE` (ignored, so the list would come back unfiltered). ' +
      'The same filter is in `x-query-deep-objects`.',
  })
  @ApiExtension('x-query-deep-objects', [
    {
      name: 'metadata',
      style: 'deepObject',
      explode: true,
      schema: { type: 'object', maxProperties: BOUNDS.metadataKeys, additionalProperties: { type: 'string', maxLength: BOUNDS.metadataValue } },
    },
  ])
  // the handler receives the pipe's normalized request, so the DTO is named here: a class without a name is documented as its properties
  @ApiQuery({ type: ConversationListQuery })
  @ApiQuery(SOURCE_QUERY)
  @ApiEnvelope(ConversationSummaryDto, { list: true })
  @ApiErrors(422)
  listConversations(@Auth() auth: AuthContext, @Query(ConversationListQueryPipe) request: ConversationListRequest): Promise<Page<ConversationSummaryDto>> {
    return this.conversations.listConversations(auth.orgId, request);
  }

  @Get(':id')
  @RequireScope('conversations:read')
  @ApiOperation({ operationId: 'getConversation', summary: 'One conversation with its full message thread' })
  @ApiParam(CONVERSATION_ID)
  @ApiEnvelope(ConversationDetailDto)
  @ApiErrors(404, 422)
  getConversation(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: ConversationDetailQuery): Promise<ConversationDetailDto> {
    return this.conversations.getConversation(auth.orgId, id, query.include_trigger_payload === true);
  }

  @Get(':id/messages')
  @RequireScope('conversations:read')
  @ApiOperation({ operationId: 'listConversationMessages', summary: 'Messages of a conversation, oldest first' })
  @ApiParam(CONVERSATION_ID)
  @ApiEnvelope(MessageDto, { list: true })
  @ApiErrors(404, 422)
  listConversationMessages(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: PaginationQuery): Promise<Page<MessageDto>> {
    return this.conversations.listMessages(auth.orgId, id, query);
  }
}
