import { Injectable } from '@nestjs/common';
import { parseId } from '../../libs/ids/ids';
import { ApiError } from '../common/api-error';
import type { Page } from '../common/envelope';
import { Paginator, type PaginationQuery } from '../common/pagination';
import type { TriggerDto } from './triggers.dto';
import { mapTrigger } from './triggers.mapper';
import { TriggersRepository } from './triggers.repository';
import { TRIGGER_ID } from './triggers.ids';

@Injectable()
export class TriggersService {
  constructor(
    private readonly repository: TriggersRepository,
    private readonly paginator: Paginator,
  ) {}

  async listTriggers(orgId: string, query: PaginationQuery): Promise<Page<TriggerDto>> {
    const page = this.paginator.pageRequest(query, { cursorNamespace: 'triggers' });
    const rows = await this.repository.listPage(orgId, page);
    return this.paginator.page(rows, page).map(mapTrigger);
  }

  async getTrigger(orgId: string, rawId: string): Promise<TriggerDto> {
    // trigger path ids are `trigger_<24 hex>` only
    const id = parseId(TRIGGER_ID, rawId);
    const row = id ? await this.repository.findById(orgId, id) : null;
    if (!row) throw ApiError.notFound('Trigger');
    return mapTrigger(row);
  }
}
