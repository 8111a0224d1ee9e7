import { Injectable } from '@nestjs/common';
import { newId, parseId } from '../../libs/ids/ids';
import { accepted, ApiError } from '../common/api-error';
import type { Page } from '../common/envelope';
import { Paginator, type PaginationQuery } from '../common/pagination';
import { OrgsRepository } from '../orgs/orgs.repository';
import { checkCountCap } from '../orgs/plan-limits';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import type { DeleteAcknowledgementDto } from '../common/delete-ack.dto';
import type { SourceCreateDto, SourceDto } from './sources.dto';
import { mapSource } from './sources.mapper';
import { SourcesRepository } from './sources.repository';
import type { LockedRepresentation } from '../conditional/conditional.decorators';
import { buildNewSource } from './sources.rules';

@Injectable()
export class SourcesService implements LockedRepresentation {
  constructor(
    private readonly txHost: TransactionHost<DatabaseTransactions>,
    private readonly repository: SourcesRepository,
    private readonly orgs: OrgsRepository,
    private readonly paginator: Paginator,
  ) {}

  async listSources(orgId: string, query: PaginationQuery): Promise<Page<SourceDto>> {
    const request = this.paginator.pageRequest(query, { cursorNamespace: 'sources' });
    const rows = await this.repository.listPage(orgId, request);
    return this.paginator.page(rows, request).map(mapSource);
  }

  async getSource(orgId: string, rawId: string): Promise<SourceDto> {
    const id = parseId('source', rawId);
    const row = id ? await this.repository.findById(orgId, id) : null;
    if (!row) throw ApiError.notFound('Source');
    return mapSource(row);
  }

  /** The source as GET answers it, locked until the transaction ends (If-Match on DELETE). */
  async lockedRepresentation(orgId: string, rawId: string): Promise<SourceDto | null> {
    const id = parseId('source', rawId);
    const row = id ? await this.repository.findForUpdate(orgId, id) : null;
    return row ? mapSource(row) : null;
  }

  async createSource(orgId: string, input: SourceCreateDto): Promise<SourceDto> {
    // the validation pipe has run SourceCreateDto's @BodyPrecheck; callers that bypass it get the same answers
    const { type, name, config } = accepted(buildNewSource(input)).value;

    const row = await this.txHost.withTransaction(async () => {
      await this.enforceSourceCap(orgId);
      return this.repository.insert(
        {
          id: newId('source'),
          orgId,
          type,
          name,
          syncStatus: 'fetching',
          documentCount: null,
          config,
        },
      );
    });
    return mapSource(row);
  }

  /**
   * Irreversible; removes the source, its documents and every agent's
   * `data_sources` entry naming it, in one transaction. Deleting the upload
   * singleton empties it for good: its documents and references go with its
   * id, and a fresh empty upload source (new id) takes its place, so the
   * singleton still exists (POST type=upload keeps answering 409).
   */
  async deleteSource(orgId: string, rawId: string): Promise<DeleteAcknowledgementDto> {
    const id = parseId('source', rawId);
    if (!id) throw ApiError.notFound('Source');
    await this.txHost.withTransaction(async () => {
      const row = await this.repository.findForUpdate(orgId, id);
      if (!row) throw ApiError.notFound('Source');
      if (!(await this.repository.deleteWithDocuments(orgId, id))) throw ApiError.notFound('Source');
      await this.repository.removeSourceFromAgents(orgId, id);
      if (row.type === 'upload') await this.repository.insertUploadSingleton(orgId);
    });
    return { id, deleted: true };
  }

  private async enforceSourceCap(orgId: string): Promise<void> {
    const limits = await this.orgs.lockLimits(orgId);
    await checkCountCap('sources', limits?.sources, () => this.repository.countCapped(orgId), 'sources (the upload source does not count)');
  }
}
