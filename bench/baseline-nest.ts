import 'reflect-metadata';
import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  HttpException,
  Injectable,
  Module,
  Param,
  Patch,
  Post,
  Query,
  Res,
  type CallHandler,
  type CanActivate,
  type NestInterceptor,
  type PipeTransform,
  type Provider,
} from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, APP_PIPE, NestFactory } from '@nestjs/core';
import { AsyncLocalStorage } from 'node:async_hooks';
import { map, type Observable } from 'rxjs';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply } from 'fastify';
import { randomBytes } from 'node:crypto';
import { BenchSql, type Row } from './baseline-sql';

/**
 * Baseline (c), the framework by itself: a minimal NestJS app on the same
 * Fastify adapter as the service, one controller method per benched path
 * running the same SQL as baseline (b), with no guards, interceptors, pipes
 * or filters of its own (Nest's defaults only) and no request log.
 *
 * With BENCH_C_PIPELINE=1 it gets the skeleton of the service's pipeline,
 * each part doing nothing: every request in an AsyncLocalStorage scope (the
 * service's database deadline), four global guards (authentication, the rate
 * limit, authorization and the tenant bound: synchronous for a key in memory,
 * the in-process rate-limit store and a free slot), one global pipe, two
 * global interceptors (idempotency's, which passes a read through, and the
 * envelope's), and an `onSend` hook (where the tenant's slots are given back).
 * What the design's pipeline costs before it does any work.
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

@Injectable()
class NothingGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

@Injectable()
class NothingPipe implements PipeTransform {
  transform(value: unknown): unknown {
    return value;
  }
}

@Injectable()
class PassInterceptor implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

@Injectable()
class MapInterceptor implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((body: unknown) => body));
  }
}

const PIPELINE = process.env.BENCH_C_PIPELINE === '1';
const scope = new AsyncLocalStorage<{ at: number }>();
const pipeline: Provider[] = [
  { provide: APP_GUARD, useClass: NothingGuard },
  { provide: APP_GUARD, useClass: NothingGuard },
  { provide: APP_GUARD, useClass: NothingGuard },
  { provide: APP_GUARD, useClass: NothingGuard },
  { provide: APP_PIPE, useClass: NothingPipe },
  { provide: APP_INTERCEPTOR, useClass: PassInterceptor },
  { provide: APP_INTERCEPTOR, useClass: MapInterceptor },
];

@Module({ controllers: [OrgController, AgentsController, ConversationsController], providers: PIPELINE ? pipeline : [] })
class BaselineModule {}

async function main(): Promise<void> {
  sql = await BenchSql.open();
  const app = await NestFactory.create<NestFastifyApplication>(BaselineModule, new FastifyAdapter(), { logger: ['error', 'warn'] });
  app.setGlobalPrefix('api/v1');
  if (PIPELINE) {
    app
      .getHttpAdapter()
      .getInstance()
      .addHook('preHandler', (_request: unknown, _reply: unknown, done: () => void) => scope.run({ at: Date.now() }, () => done()))
      .addHook('onSend', (_request: unknown, _reply: unknown, payload: unknown, done: (error: null, payload: unknown) => void) => done(null, payload));
  }
  await app.listen(Number(process.env.PORT), '127.0.0.1');
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

main().catch((error: Error) => {
  process.stderr.write(`baseline-nest failed: ${error.message}\n`);
  process.exit(1);
});
