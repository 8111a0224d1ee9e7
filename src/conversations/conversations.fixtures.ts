import { Injectable } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { newId } from '../../libs/ids/ids';
import type { ToolCallRow } from './conversations.table';
import { fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { CONVERSATION_SOURCES, MESSAGE_ROLES } from './conversations.dto';
import { ConversationsRepository, type NewConversationRow, type NewMessageRow } from './conversations.repository';
import { IsIdOf } from '../common/input-bounds';
import { IsDateTime } from '../common/validation';

class ToolCallFixture {
  @IsString() @MaxLength(200) id!: string;
  @IsString() @MaxLength(200) name!: string;
  @IsString() arguments!: string;
  @IsOptional() @IsString() status?: string | null;
}

class MessageFixture {
  @IsOptional() @IsIdOf('message') id?: string | null;
  @IsIn(MESSAGE_ROLES) role!: string;
  @IsString() content!: string;
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => ToolCallFixture) tool_calls?: ToolCallFixture[] | null;
  @IsOptional() @IsString() tool_call_id?: string | null;
  @IsOptional() @IsString() tool_name?: string | null;
  @IsOptional() @IsString() connector_type?: string | null;
  @IsOptional() @IsString() model?: string | null;
  @IsOptional() @IsDateTime() created_at?: string | null;
}

class ConversationFixture {
  @IsOptional() @IsIdOf('conversation') id?: string;
  @IsOptional() @IsString() @MaxLength(500) title?: string | null;
  @IsIn(CONVERSATION_SOURCES) source!: string;
  @IsOptional() @IsIdOf('agent') agent_id?: string | null;
  @IsOptional() @IsString() @MaxLength(200) model?: string | null;
  @IsOptional() @IsBoolean() autonomous?: boolean;
  @IsOptional() @IsBoolean() is_onboarding?: boolean;
  @IsOptional() @IsBoolean() is_simulation?: boolean;
  @IsOptional() @IsInt() @Min(1) conversation_number?: number | null;
  @IsOptional() @IsIdOf('conversation') parent_conversation_id?: string | null;
  @IsOptional() @IsInt() @Min(0) credits_used?: number;
  @IsOptional() @IsObject() metadata?: Record<string, unknown> | null;
  @IsOptional() @IsInt() @Min(0) message_count?: number | null;
  @IsOptional() @IsDateTime() last_message_at?: string | null;
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => MessageFixture) messages?: MessageFixture[];
  /** the raw webhook payload: a JSON object (the API documents it as object or null) */
  @IsOptional() @IsObject() trigger_payload?: Record<string, unknown> | null;
}

export interface ParsedConversations {
  rows: NewConversationRow[];
  threads: Map<string, NewMessageRow[]>;
}

/** A ticket id as stored by upstream tools: a non-empty string or a finite number, as text. */
function ticketText(value: unknown): string | null {
  if (typeof value === 'string' && value.trim() !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/** ticket_id matches metadata.ticketId, metadata.ticket_id or trigger_payload.ticket.id. */
export function ticketIdsOf(metadata: Record<string, unknown> | null | undefined, triggerPayload: unknown): string[] {
  const payloadTicket =
    triggerPayload && typeof triggerPayload === 'object' && !Array.isArray(triggerPayload)
      ? (triggerPayload as { ticket?: unknown }).ticket
      : undefined;
  const candidates = [
    metadata?.ticketId,
    metadata?.ticket_id,
    payloadTicket && typeof payloadTicket === 'object' ? (payloadTicket as { id?: unknown }).id : undefined,
  ];
  return [...new Set(candidates.map(ticketText).filter((id): id is string => id !== null))];
}

@Injectable()
export class ConversationsFixtureSection extends RegisteredFixtureSection<ParsedConversations> {
  constructor(private readonly repository: ConversationsRepository) {
    super({ name: 'conversations', order: 50, demoFile: 'src/conversations/conversations.demo.json' });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): ParsedConversations {
    const threads = new Map<string, NewMessageRow[]>();
    const unnumbered: number[] = [];
    const messageIds = new Set<string>();
    const rows = this.parseRows(ConversationFixture, value, path, ctx, (item, here, index): NewConversationRow => {
      const createdAt = fixtureDate(item.created_at) ?? undefined;
      const id = item.id ?? newId('conversation', createdAt);
      const thread = (item.messages ?? []).map((message, m): NewMessageRow => {
        const messageId = message.id ?? newId('message', fixtureDate(message.created_at) ?? createdAt);
        if (messageIds.has(messageId)) throw new FixtureError(`${here}.messages[${m}].id`, `duplicate message id ${messageId}`);
        messageIds.add(messageId);
        return {
          id: messageId,
          orgId: ctx.orgId,
          conversationId: id,
          role: message.role,
          content: message.content,
          toolCalls: message.tool_calls
            ? message.tool_calls.map((call): ToolCallRow => ({ id: call.id, name: call.name, arguments: call.arguments, status: call.status ?? null }))
            : null,
          toolCallId: message.tool_call_id ?? null,
          toolName: message.tool_name ?? null,
          connectorType: message.connector_type ?? null,
          model: message.model ?? null,
          createdAt: fixtureDate(message.created_at),
        };
      });
      // message_count is derived from the messages; a disagreeing value is an error
      if (item.message_count !== undefined && item.message_count !== null && item.message_count !== thread.length) {
        throw new FixtureError(`${here}.message_count`, `is ${item.message_count} but the conversation has ${thread.length} messages`);
      }
      const isSubAgent = item.source === 'sub-agent';
      if (isSubAgent && item.conversation_number !== undefined && item.conversation_number !== null) {
        throw new FixtureError(`${here}.conversation_number`, 'must be null for sub-agent runs');
      }
      if (!isSubAgent && item.parent_conversation_id) {
        throw new FixtureError(`${here}.parent_conversation_id`, 'is set only on sub-agent runs (source sub-agent)');
      }
      if (!isSubAgent && (item.conversation_number === undefined || item.conversation_number === null)) unnumbered.push(index);
      threads.set(id, thread);
      const lastMessageAt = item.last_message_at !== undefined ? fixtureDate(item.last_message_at) : latest(thread.map((m) => m.createdAt ?? null));
      return {
        id,
        orgId: ctx.orgId,
        title: item.title ?? null,
        source: item.source,
        agentId: item.agent_id ?? null,
        model: item.model ?? null,
        autonomous: item.autonomous ?? item.source === 'autonomous',
        isOnboarding: item.is_onboarding ?? false,
        isSimulation: item.is_simulation ?? false,
        conversationNumber: isSubAgent ? null : (item.conversation_number ?? null),
        parentConversationId: item.parent_conversation_id ?? null,
        creditsUsed: item.credits_used ?? 0,
        metadata: item.metadata ?? null,
        triggerPayload: item.trigger_payload === undefined ? null : item.trigger_payload,
        ticketIds: ticketIdsOf(item.metadata, item.trigger_payload),
        messageCount: thread.length,
        lastMessageAt,
        createdAt: createdAt ?? new Date(),
        updatedAt: fixtureDate(item.updated_at) ?? lastMessageAt ?? createdAt ?? new Date(),
      };
    });
    const declared = ctx.declared.get('conversations')!;
    rows.forEach((row, index) => {
      if (row.parentConversationId && !declared.has(row.parentConversationId)) {
        throw new FixtureError(`${path}[${index}].parent_conversation_id`, `unknown conversation ${row.parentConversationId}`);
      }
    });
    // conversation_number is a per-organization sequence; rows that leave it out continue the
    // fixture's own sequence in id order, so that seeding the same file twice gives the same numbers
    let next = Math.max(0, ...rows.map((row) => row.conversationNumber ?? 0)) + 1;
    for (const index of [...unnumbered].sort((a, b) => (rows[a].id! < rows[b].id! ? -1 : 1))) rows[index].conversationNumber = next++;
    return { rows, threads };
  }

  async write(orgId: string, parsed: ParsedConversations, ctx: FixtureContext): Promise<void> {
    this.requireAllWritten(parsed.rows, await this.repository.upsertMany(orgId, parsed.rows, parsed.threads), 'conversation', (i) => this.itemPath(ctx, i));
  }
}

function latest(dates: Array<Date | null>): Date | null {
  return dates.reduce<Date | null>((max, date) => (date && (!max || date > max) ? date : max), null);
}
