import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Auth, RequireScope } from '../auth/auth.decorators';
import type { Page } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { PaginationQuery } from '../common/pagination';
import type { AuthContext } from '../common/request-context';
import { ConnectorDetailDto, ConnectorSummaryDto } from './connectors.dto';
import { ConnectorsService } from './connectors.service';
import { idPattern } from '../common/input-bounds';

@ApiTags('Connectors')
@Controller('connectors')
export class ConnectorsController {
  constructor(private readonly connectors: ConnectorsService) {}

  @Get()
  @RequireScope('connectors:read')
  @ApiOperation({ operationId: 'listConnectors', summary: 'Connectors to third-party tools, newest first' })
  @ApiEnvelope(ConnectorSummaryDto, { list: true })
  @ApiErrors(422)
  listConnectors(@Auth() auth: AuthContext, @Query() query: PaginationQuery): Promise<Page<ConnectorSummaryDto>> {
    return this.connectors.listConnectors(auth.orgId, query);
  }

  @Get(':id')
  @RequireScope('connectors:read')
  @ApiOperation({ operationId: 'getConnector', summary: 'One connector with its tools' })
  @ApiParam({ name: 'id', description: '`connector_<24 hex>` or the bare 24-hex id', schema: { type: 'string', pattern: idPattern('connector', { allowBare: true }) } })
  @ApiEnvelope(ConnectorDetailDto)
  @ApiErrors(404)
  getConnector(@Auth() auth: AuthContext, @Param('id') id: string): Promise<ConnectorDetailDto> {
    return this.connectors.getConnector(auth.orgId, id);
  }
}
