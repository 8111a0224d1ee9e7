import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { idPattern } from '../common/input-bounds';

class OrgCreditsDto {
  @ApiProperty({ type: 'integer', minimum: 0 }) total!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) used!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) remaining!: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0 }) top_up?: number;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) reset_at?: string | null;
}

class OrgLimitsDto {
  @ApiProperty({ type: 'integer', minimum: 0, nullable: true, description: 'null means unlimited' }) agents!: number | null;
  @ApiProperty({ type: 'integer', minimum: 0, nullable: true }) connectors!: number | null;
  @ApiProperty({ type: 'integer', minimum: 0, nullable: true }) sources!: number | null;
  @ApiProperty({ type: 'integer', minimum: 0, nullable: true }) chatbots!: number | null;
  @ApiProperty({ type: 'integer', minimum: 0, nullable: true }) scheduled_triggers!: number | null;
  @ApiProperty({ type: 'integer', minimum: 0, nullable: true }) custom_tool_slots!: number | null;
}

class OrgTrialDto {
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) start_date!: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) end_date!: string | null;
}

export const ORG_STATUSES = ['active', 'trialing', 'past_due', 'suspended'] as const;

export class OrgDto {
  @ApiProperty({ example: 'org_0123456789abcdef01234567', pattern: idPattern('org') }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty() slug!: string;
  @ApiProperty({ description: 'Plan name.' }) plan!: string;
  @ApiProperty({ enum: ORG_STATUSES, description: '`past_due` forbids writes; `suspended` forbids reads and writes.' })
  status!: string;
  @ApiProperty({ type: OrgCreditsDto }) credits!: OrgCreditsDto;
  @ApiProperty({ type: OrgLimitsDto }) limits!: OrgLimitsDto;
  @ApiPropertyOptional({ type: OrgTrialDto, nullable: true }) trial?: OrgTrialDto | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
}
