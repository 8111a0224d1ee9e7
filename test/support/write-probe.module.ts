import { Body, Controller, Delete, Get, HttpCode, Injectable, Module, Param, Patch, Post } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { and, eq, isNull } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import { Auth, RequireScope } from '../../src/auth/auth.decorators';
import { ApiError, ErrorCode } from '../../src/common/api-error';
import { uniqueViolationConstraint } from '../../src/database/database-errors';
import { ApiEnvelope, ApiErrors } from '../../src/common/openapi';
import type { AuthContext } from '../../src/common/request-context';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../../src/database/transactions';
import { agents } from '../../src/agents/agents.table';
import { MAX_RECORD_BYTES } from '../../src/idempotency/idempotency.service';

/**
 * Test-only endpoints with real writes (rows of the `agents` table, with its
 * case-insensitive handle uniqueness), so idempotency is exercised on real
 * 201 / 200 / 404 / 409 / 422 outcomes before the real write endpoints land.
 * Every handler run is counted, so tests can prove an operation ran once.
 */
export const executions = { create: 0, update: 0 };

class ProbeCreate {
  @ApiProperty() @IsString() @Matches(/^[a-z0-9-]{1,40}$/) handle!: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(100) name?: string;
}

class ProbeUpdate {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(100) name?: string;
}

class ProbeDto {
  @ApiProperty() id!: string;
  @ApiProperty() handle!: string;
  @ApiProperty() name!: string;
  @ApiProperty() created_at!: string;
}

@Injectable()
class ProbeService {
  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {}

  async create(orgId: string, input: ProbeCreate): Promise<ProbeDto> {
    executions.create += 1;
    // a fault of the operation itself (5xx), for the rule that faults are not stored
    if (input.handle.startsWith('boom')) throw new Error('probe failure');
    // widens the window in which concurrent requests overlap
    if (input.handle.startsWith('slow')) await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      const [row] = await this.txHost.tx
        .insert(agents)
        .values({ id: newId('agent'), orgId, handle: input.handle, name: input.name ?? input.handle })
        .returning();
      // an answer over what an idempotency record may store (no real operation's comes near it)
      const name = input.handle.startsWith('huge') ? 'x'.repeat(MAX_RECORD_BYTES) : row.name;
      return { id: row.id, handle: row.handle, name, created_at: row.createdAt.toISOString() };
    } catch (error) {
      if (uniqueViolationConstraint(error) === 'agents_org_handle_unique') {
        throw new ApiError(ErrorCode.AgentHandleTaken, `The handle "${input.handle}" is taken.`);
      }
      throw error;
    }
  }

  async update(orgId: string, id: string, input: ProbeUpdate): Promise<ProbeDto> {
    executions.update += 1;
    const [row] = await this.txHost.tx
      .update(agents)
      .set({ name: input.name, updatedAt: new Date() })
      .where(and(eq(agents.orgId, orgId), eq(agents.id, id), isNull(agents.deletedAt)))
      .returning();
    if (!row) throw new ApiError(ErrorCode.AgentNotFound, 'Agent not found.');
    return { id: row.id, handle: row.handle, name: row.name, created_at: row.createdAt.toISOString() };
  }

  async get(orgId: string, id: string): Promise<ProbeDto> {
    const [row] = await this.txHost.tx.select().from(agents).where(and(eq(agents.orgId, orgId), eq(agents.id, id)));
    if (!row) throw new ApiError(ErrorCode.AgentNotFound, 'Agent not found.');
    return { id: row.id, handle: row.handle, name: row.name, created_at: row.createdAt.toISOString() };
  }

  async remove(orgId: string, id: string): Promise<{ id: string; deleted: true }> {
    const [row] = await this.txHost.tx.delete(agents).where(and(eq(agents.orgId, orgId), eq(agents.id, id))).returning();
    if (!row) throw new ApiError(ErrorCode.AgentNotFound, 'Agent not found.');
    return { id: row.id, deleted: true };
  }
}

@Controller('test-probes')
class ProbeController {
  constructor(private readonly probes: ProbeService) {}

  @Post()
  @RequireScope('agents:write')
  @ApiEnvelope(ProbeDto, { status: 201 })
  @ApiErrors(409, 422)
  createProbe(@Auth() auth: AuthContext, @Body() body: ProbeCreate): Promise<ProbeDto> {
    return this.probes.create(auth.orgId, body);
  }

  @Patch(':id')
  @RequireScope('agents:write')
  @ApiEnvelope(ProbeDto)
  @ApiErrors(404, 422)
  updateProbe(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: ProbeUpdate): Promise<ProbeDto> {
    return this.probes.update(auth.orgId, id, body);
  }

  @Get(':id')
  @RequireScope('agents:read')
  @ApiEnvelope(ProbeDto)
  getProbe(@Auth() auth: AuthContext, @Param('id') id: string): Promise<ProbeDto> {
    return this.probes.get(auth.orgId, id);
  }

  @Delete(':id')
  @HttpCode(200)
  @RequireScope('agents:delete')
  deleteProbe(@Auth() auth: AuthContext, @Param('id') id: string): Promise<{ id: string; deleted: true }> {
    return this.probes.remove(auth.orgId, id);
  }
}

@Module({ controllers: [ProbeController], providers: [ProbeService] })
export class WriteProbeModule {}
