import 'reflect-metadata';
import { Body, Controller, Get, Headers, HttpCode, HttpException, Module, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply } from 'fastify';
import { randomBytes } from 'node:crypto';
import { BenchSql, type Row } from './baseline-sql';

/**
 * Baseline (c), the framework by itself: a minimal NestJS app on the same
 * Fastify adapter as the service, one controller method per benched path
 * running the same SQL as baseline (b), with no guards, interceptors, pipes
 * or filters of its own (Nest's defaults only) and no request log.
 */
let sql: BenchSql;

function begin(authorization: string | undefined, reply: FastifyReply): { orgId: string; requestId: string } {
  const requestId = `req_${randomBytes(16).toString('hex')}`;
  void reply.header('x-request-id', requestId);
  const orgId = sql.orgOf(authorization);
  if (!orgId) throw new HttpException({ error: { code: 'unauthorized', message: 'A valid API key is required.', request_id: requestId } }, 401);
  return { orgId, requestId };
}

function one(row: Row | undefined, requestId: string) {
  if (!row) throw new HttpException({ error: { code: 'not_found', message: 'Not found.', request_id: requestId } }, 404);
  return { data: row, meta: { request_id: requestId } };
}

function page([rows, nextCursor]: [Row[], string | null], requestId: string) {
  return { data: rows, meta: { request_id: requestId, next_cursor: nextCursor } };
}

@Controller('org')
class OrgController {
  @Get()
  async get(@Headers('authorization') auth: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const { orgId, requestId } = begin(auth, reply);
    return one(await sql.org(orgId), requestId);
  }
}

@Controller('agents')
class AgentsController {
  @Get()
  async list(@Headers('authorization') auth: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const { orgId, requestId } = begin(auth, reply);
    return page(await sql.agents(orgId), requestId);
  }

  @Get(':id')
  async get(@Param('id') id: string, @Headers('authorization') auth: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const { orgId, requestId } = begin(auth, reply);
    return one(await sql.agent(orgId, id), requestId);
  }

  @Post()
  @HttpCode(201)
  async create(@Body() body: Row | null, @Headers('authorization') auth: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const { orgId, requestId } = begin(auth, reply);
    return one(await sql.createAgent(orgId, body), requestId);
  }

  @Patch(':id')
  async rename(@Param('id') id: string, @Body() body: Row | null, @Headers('authorization') auth: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const { orgId, requestId } = begin(auth, reply);
    return one(await sql.renameAgent(orgId, id, body?.name), requestId);
  }
}

@Controller('conversations')
class ConversationsController {
  @Get()
  async list(
    @Query('agent_id') agentId: string | undefined,
    @Query('source') source: string | undefined,
    @Headers('authorization') auth: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const { orgId, requestId } = begin(auth, reply);
    return page(await sql.conversations(orgId, agentId, source), requestId);
  }
}

@Module({ controllers: [OrgController, AgentsController, ConversationsController] })
class BaselineModule {}

async function main(): Promise<void> {
  sql = await BenchSql.open();
  const app = await NestFactory.create<NestFastifyApplication>(BaselineModule, new FastifyAdapter(), { logger: ['error', 'warn'] });
  app.setGlobalPrefix('api/v1');
  await app.listen(Number(process.env.PORT), '127.0.0.1');
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

main().catch((error: Error) => {
  process.stderr.write(`baseline-nest failed: ${error.message}\n`);
  process.exit(1);
});
