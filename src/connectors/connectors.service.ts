import { Injectable } from '@nestjs/common';
import { parseId } from '../../libs/ids/ids';
import { ApiError } from '../common/api-error';
import type { Page } from '../common/envelope';
import { Paginator, type PaginationQuery } from '../common/pagination';
import type { ConnectorDetailDto, ConnectorSummaryDto } from './connectors.dto';
import { mapConnectorDetail, mapConnectorSummary } from './connectors.mapper';
import { ConnectorsRepository } from './connectors.repository';

@Injectable()
export class ConnectorsService {
  constructor(
    private readonly repository: ConnectorsRepository,
    private readonly paginator: Paginator,
  ) {}

  async listConnectors(orgId: string, query: PaginationQuery): Promise<Page<ConnectorSummaryDto>> {
    const page = this.paginator.pageRequest(query, { cursorNamespace: 'connectors' });
    const rows = await this.repository.listPage(orgId, page);
    return this.paginator.page(rows, page).map(mapConnectorSummary);
  }

  async getConnector(orgId: string, rawId: string): Promise<ConnectorDetailDto> {
    // connector path ids accept the bare 24-hex form
    const id = parseId('connector', rawId, { allowBare: true });
    const row = id ? await this.repository.findById(orgId, id) : null;
    if (!row) throw ApiError.notFound('Connector');
    return mapConnectorDetail(row);
  }
}
