import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import { DeleteAcknowledgementDto } from '../common/delete-ack.dto';
import type { Page } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { planCapDescription } from '../orgs/plan-limits';
import { PaginationQuery } from '../common/pagination';
import type { AuthContext } from '../common/request-context';
import { SourceCreateDto, SourceDto } from './sources.dto';
import { SourcesService } from './sources.service';
import { ConditionalWrites } from '../conditional/conditional.decorators';
import { idPattern } from '../common/input-bounds';

const SOURCE_ID = { name: 'id', description: '`source_<24 hex>`', schema: { type: 'string', pattern: idPattern('source') } } as const;

@ApiTags('Sources')
@Controller('sources')
@ConditionalWrites(SourcesService)
export class SourcesController {
  constructor(private readonly sources: SourcesService) {}

  @Get()
  @RequireScope('sources:read')
  @ApiOperation({ operationId: 'listSources', summary: 'Knowledge sources, newest first' })
  @ApiEnvelope(SourceDto, { list: true })
  @ApiErrors(422)
  listSources(@Auth() auth: AuthContext, @Query() query: PaginationQuery): Promise<Page<SourceDto>> {
    return this.sources.listSources(auth.orgId, query);
  }

  @Post()
  @RequireScope('sources:write')
  @ApiOperation({
    operationId: 'createSource',
    summary: 'Create a website or webpage source',
    description:
      '`type` = `upload` returns 409 (the singleton already exists); `type` = `connector` returns 422. New sources start in `sync_status` `fetching`. ' +
      planCapDescription('sources', 'the upload source does not count'),
  })
  // "Try it out" in /docs sends this as it is: a valid body
  @ApiBody({
    type: SourceCreateDto,
    examples: { website: { summary: 'A website source', value: { type: 'website', name: 'Help center', config: { url: 'https://help.example.com' } } } },
  })
  @ApiEnvelope(SourceDto, { status: 201 })
  @ApiErrors({ status: 409, description: '`conflict`: `type` = `upload` — the upload source is a per-organization singleton that already exists.' }, 422)
  createSource(@Auth() auth: AuthContext, @Body() body: SourceCreateDto): Promise<SourceDto> {
    return this.sources.createSource(auth.orgId, body);
  }

  @Get(':id')
  @RequireScope('sources:read')
  @ApiOperation({ operationId: 'getSource', summary: 'Fetch a source' })
  @ApiParam(SOURCE_ID)
  @ApiEnvelope(SourceDto)
  @ApiErrors(404)
  getSource(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SourceDto> {
    return this.sources.getSource(auth.orgId, id);
  }

  @Delete(':id')
  @HttpCode(200)
  @RequireScope('sources:delete')
  @ApiOperation({
    operationId: 'deleteSource',
    summary: 'Delete a source (irreversible)',
    description:
      "Removes every document of the source and the source reference from every agent's `data_sources`. Deleting the upload source empties it: a fresh upload source with a new id takes its place.",
  })
  @ApiParam(SOURCE_ID)
  @ApiEnvelope(DeleteAcknowledgementDto)
  @ApiErrors(404)
  deleteSource(@Auth() auth: AuthContext, @Param('id') id: string): Promise<DeleteAcknowledgementDto> {
    return this.sources.deleteSource(auth.orgId, id);
  }
}
