import { Injectable } from '@nestjs/common';
import { IsArray, IsBoolean, IsNotEmpty, IsObject, IsOptional, IsString, MaxLength } from 'class-validator';
import { randomUrlSafe } from '../../libs/crypto/crypto';
import { newId } from '../../libs/ids/ids';
import { cascadeStateOf } from '../agents/agents.fixtures';
import { BOUNDS } from '../common/input-bounds';
import { fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { CHATBOT_BOUNDS } from './chatbots.bounds';
import { ChatbotsRepository, type NewChatbotRow } from './chatbots.repository';
import { IsIdOf } from '../common/input-bounds';
import { IsDateTime } from '../common/validation';
import { CHATBOT_ID } from './chatbots.ids';

class ChatbotFixture {
  @IsOptional() @IsIdOf(CHATBOT_ID) id?: string;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(CHATBOT_BOUNDS.publicId) public_id?: string;
  @IsString() @IsNotEmpty() @MaxLength(BOUNDS.name) name!: string;
  @IsOptional() @IsIdOf('agent') agent_id?: string | null;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @IsBoolean() allow_write_tools?: boolean;
  @IsOptional() @IsArray() @IsString({ each: true }) allowed_domains?: string[];
  @IsOptional() @IsObject() theme?: Record<string, unknown> | null;
  @IsOptional() @IsString() @MaxLength(CHATBOT_BOUNDS.welcomeMessage) welcome_message?: string | null;
  /** set by the agent cascade (see the agents section): `agent_deactivated` rows come back when their agent is reactivated */
  @IsOptional() @IsString() @MaxLength(BOUNDS.deactivatedReason) deactivated_reason?: string | null;
  @IsOptional() @IsDateTime() deactivated_at?: string | null;
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

@Injectable()
export class ChatbotsFixtureSection extends RegisteredFixtureSection<NewChatbotRow[]> {
  constructor(private readonly repository: ChatbotsRepository) {
    super({ name: 'chatbots', order: 60, demoFile: 'src/chatbots/chatbots.demo.json' });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): NewChatbotRow[] {
    const publicIds = new Set<string>();
    return this.parseRows(ChatbotFixture, value, path, ctx, (item, at): NewChatbotRow => {
      const createdAt = fixtureDate(item.created_at) ?? new Date();
      const id = item.id ?? newId(CHATBOT_ID, createdAt);
      // a generated public id must be stable across re-seeding, so derive it from the id when given
      const publicId = item.public_id ?? (item.id ? `cb_${item.id.slice('chatbot_'.length)}` : `cb_${randomUrlSafe(16)}`);
      if (publicIds.has(publicId)) throw new FixtureError(`${at}.public_id`, `duplicate public_id ${publicId}`);
      publicIds.add(publicId);
      return {
        id,
        orgId: ctx.orgId,
        publicId,
        name: item.name,
        agentId: item.agent_id ?? null,
        isActive: item.is_active ?? true,
        allowWriteTools: item.allow_write_tools ?? false,
        allowedDomains: item.allowed_domains ?? [],
        theme: item.theme ?? null,
        welcomeMessage: item.welcome_message ?? null,
        ...cascadeStateOf(item, at, ctx),
        createdAt,
        updatedAt: fixtureDate(item.updated_at) ?? createdAt,
      };
    });
  }

  async write(orgId: string, rows: NewChatbotRow[], ctx: FixtureContext): Promise<void> {
    await this.writeRows(ctx, rows, 'chatbot', (batch) => this.repository.upsertMany(orgId, batch));
  }
}
