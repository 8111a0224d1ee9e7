import { Injectable } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsIn, IsNotEmpty, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { newId } from '../../libs/ids/ids';
import { OptionalNonNull, IsDateTime } from '../common/validation';
import type { ConnectorToolRow } from './connectors.table';
import { fixtureDate, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { CONNECTOR_STATUSES, CONNECTOR_TOOL_TYPES } from './connectors.dto';
import { ConnectorsRepository, type NewConnectorRow } from './connectors.repository';
import { IsIdOf } from '../common/input-bounds';

/** The contract types a tool's optional fields without null. */
class ConnectorToolFixture {
  @IsString() @IsNotEmpty() @MaxLength(200) name!: string;
  @OptionalNonNull() @IsString() label?: string;
  @OptionalNonNull() @IsString() description?: string;
  @OptionalNonNull() @IsIn(CONNECTOR_TOOL_TYPES) type?: 'read' | 'write';
  @OptionalNonNull() @IsBoolean() requires_confirmation?: boolean;
  @OptionalNonNull() @IsBoolean() disabled?: boolean;
}

class ConnectorFixture {
  @IsOptional() @IsIdOf('connector') id?: string;
  @IsString() @IsNotEmpty() @MaxLength(100) type!: string;
  @IsString() @IsNotEmpty() @MaxLength(200) name!: string;
  @IsOptional() @IsIn(CONNECTOR_STATUSES) status?: string;
  @IsOptional() @IsString() @MaxLength(1000) status_reason?: string | null;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => ConnectorToolFixture) tools?: ConnectorToolFixture[];
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

@Injectable()
export class ConnectorsFixtureSection extends RegisteredFixtureSection<NewConnectorRow[]> {
  constructor(private readonly repository: ConnectorsRepository) {
    super({ name: 'connectors', order: 20, demoFile: 'src/connectors/connectors.demo.json' });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): NewConnectorRow[] {
    return this.parseRows(ConnectorFixture, value, path, ctx, (item): NewConnectorRow => {
      const createdAt = fixtureDate(item.created_at) ?? new Date();
      return {
        id: item.id ?? newId('connector', createdAt),
        orgId: ctx.orgId,
        type: item.type,
        name: item.name,
        status: item.status ?? 'connected',
        statusReason: item.status_reason ?? null,
        isActive: item.is_active ?? true,
        tools: (item.tools ?? []).map((tool): ConnectorToolRow => {
          const row: ConnectorToolRow = { name: tool.name };
          if (tool.label !== undefined) row.label = tool.label;
          if (tool.description !== undefined) row.description = tool.description;
          if (tool.type !== undefined) row.type = tool.type;
          if (tool.requires_confirmation !== undefined) row.requires_confirmation = tool.requires_confirmation;
          if (tool.disabled !== undefined) row.disabled = tool.disabled;
          return row;
        }),
        createdAt,
        updatedAt: fixtureDate(item.updated_at) ?? createdAt,
      };
    });
  }

  async write(orgId: string, rows: NewConnectorRow[], ctx: FixtureContext): Promise<void> {
    await this.writeRows(ctx, rows, 'connector', (batch) => this.repository.upsertMany(orgId, batch));
  }
}
