import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { idPattern } from '../common/input-bounds';

export const CONNECTOR_STATUSES = ['connected', 'auth_failed', 'token_expired'] as const;
export const CONNECTOR_TOOL_TYPES = ['read', 'write'] as const;

export class ConnectorSummaryDto {
  @ApiProperty({ pattern: idPattern('connector') }) id!: string;
  @ApiProperty({ description: 'kind of third-party tool' }) type!: string;
  @ApiProperty({ description: 'display name; distinguishes several instances of the same type' }) name!: string;
  @ApiProperty({ enum: CONNECTOR_STATUSES }) status!: string;
  @ApiPropertyOptional({ type: 'string', nullable: true }) status_reason?: string | null;
  @ApiProperty() is_active!: boolean;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) created_at?: string | null;
  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true }) updated_at?: string | null;
}

export class ConnectorToolDto {
  @ApiProperty() name!: string;
  @ApiPropertyOptional() label?: string;
  @ApiPropertyOptional() description?: string;
  @ApiPropertyOptional({ enum: CONNECTOR_TOOL_TYPES }) type?: string;
  @ApiPropertyOptional() requires_confirmation?: boolean;
  @ApiPropertyOptional({ description: 'true if the tool has been turned off for this connector instance in the dashboard' }) disabled?: boolean;
}

export class ConnectorDetailDto extends ConnectorSummaryDto {
  @ApiProperty({ type: [ConnectorToolDto] }) tools!: ConnectorToolDto[];
}
