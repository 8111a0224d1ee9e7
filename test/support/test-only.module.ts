import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { RequireScope } from '../../src/auth/auth.decorators';

class EchoBody {
  @IsString() @MaxLength(100) name!: string;
  @IsOptional() @IsString() note?: string;
}

/**
 * Routes the backbone has no production use for yet — a write, a handler
 * that fails — so that the cross-cutting rules (org_inactive on writes,
 * 500 without internals, unknown body fields) are proven before the
 * resource modules bring real ones. Mounted only by the tests that import it.
 */
@Controller('test-only')
class TestOnlyController {
  @Post('echo')
  @RequireScope('org:read')
  echo(@Body() body: EchoBody): EchoBody {
    return { name: body.name, ...(body.note !== undefined ? { note: body.note } : {}) };
  }

  @Get('boom')
  @RequireScope('org:read')
  boom(): never {
    throw new Error('connect ECONNSECRET to db-internal.example:5432 password=hunter2');
  }
}

@Module({ controllers: [TestOnlyController] })
export class TestOnlyModule {}
