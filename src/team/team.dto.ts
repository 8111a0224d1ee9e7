import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export const MEMBER_ROLES = ['owner', 'admin', 'member'] as const;

export class MemberDto {
  @ApiProperty() id!: string;
  @ApiProperty() user_id!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) name?: string | null;
  @ApiProperty({ format: 'email' }) email!: string;
  @ApiProperty({ enum: MEMBER_ROLES }) role!: string;
  @ApiProperty() is_active!: boolean;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) last_login_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
}
