import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { idPattern } from '../common/input-bounds';
import { CHATBOT_ID } from './chatbots.ids';

export class ChatbotDto {
  @ApiProperty({ pattern: idPattern(CHATBOT_ID) }) id!: string;
  @ApiProperty({ description: 'widget identifier embedded in customer sites; safe to expose' }) public_id!: string;
  @ApiProperty() name!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) agent_id?: string | null;
  @ApiProperty({ description: 'false while paused (e.g. its agent is inactive or deleted)' }) is_active!: boolean;
  @ApiProperty() allow_write_tools!: boolean;
  @ApiProperty({ type: [String] }) allowed_domains!: string[];
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true }) theme?: Record<string, unknown> | null;
  @ApiPropertyOptional({ type: 'string', nullable: true }) welcome_message?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) updated_at?: string | null;
}
