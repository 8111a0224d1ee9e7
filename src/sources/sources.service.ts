import { Inject, Injectable } from '@nestjs/common';
import { newId, parseId } from '../../libs/ids/ids';
import { ApiError, ErrorCode, type FieldErrors } from '../common/api-error';
import type { Page } from '../common/envelope';
import { BOUNDS } from '../common/input-bounds';
import { nestingDepth } from '../common/validation';
import { Paginator, type PaginationQuery } from '../common/pagination';
import { outboundUrlProblem } from '../common/url-policy';
import { OrgsRepository } from '../orgs/orgs.repository';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import type { DeleteAcknowledgementDto } from '../common/delete-ack.dto';
import { connectorSourceRefused, uploadSourceConflict, type CreateSourceDto, type SourceDto } from './sources.dto';
import { mapSource } from './sources.mapper';
import { SourcesRepository } from './sources.repository';

export const MAX_CONFIG_BYTES = BOUNDS.sourceConfigBytes;
export const MAX_CONFIG_DEPTH = BOUNDS.sourceConfigDepth;


/**
 * `config` of a website or webpage source: `url` required under the shared
 * outbound URL policy, `indexed` a boolean (default false), other keys kept
 * but bounded in size and depth (`BOUNDS.sourceConfig*`). The API and the
 * fixture loader both judge with this function. `path` prefixes field names
 * (fixtures).
 */
export function sourceConfigProblems(config: Record<string, unknown> | undefined, path = 'config', options: { requireUrl?: boolean } = {}): FieldErrors {
  const fields: FieldErrors = {};
  const requireUrl = options.requireUrl ?? true;
  if (config === undefined) return requireUrl ? { [`${path}.url`]: ['is required for website and webpage sources'] } : {};
  if (Buffer.byteLength(JSON.stringify(config)) > MAX_CONFIG_BYTES) fields[path] = [`must be at most ${MAX_CONFIG_BYTES} bytes as JSON`];
  else if (nestingDepth(config, MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH) fields[path] = [`must be nested at most ${MAX_CONFIG_DEPTH} levels deep`];
  // requireUrl false: the fixture's Source shape, a stored source whose URL is not shipped with it
  if (config.url === undefined || config.url === null) {
    if (requireUrl || config.url === null) fields[`${path}.url`] = ['is required for website and webpage sources'];
  } else if (typeof config.url !== 'string') fields[`${path}.url`] = ['must be a string'];
  else {
    const problem = outboundUrlProblem(config.url);
    if (problem) fields[`${path}.url`] = [problem];
  }
  if (config.indexed !== undefined && typeof config.indexed !== 'boolean') fields[`${path}.indexed`] = ['must be a boolean'];
  return fields;
}

/** The stored `config` of a website or webpage source: `indexed` defaults to false, other keys kept. */
export function sourceConfigRow(config: Record<string, unknown> | undefined): Record<string, unknown> {
  return { ...config, indexed: config?.indexed ?? false };
}

@Injectable()
export class SourcesService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly repository: SourcesRepository,
    private readonly orgs: OrgsRepository,
    private readonly paginator: Paginator,
  ) {}

  async listSources(orgId: string, query: PaginationQuery): Promise<Page<SourceDto>> {
    const request = this.paginator.request('sources', query);
    const rows = await this.repository.listPage(orgId, request);
    return this.paginator.page(rows, request).map(mapSource);
  }

  async getSource(orgId: string, rawId: string): Promise<SourceDto> {
    const id = parseId('source', rawId);
    const row = id ? await this.repository.findById(orgId, id) : null;
    if (!row) throw ApiError.notFound('Source');
    return mapSource(row);
  }

  async createSource(orgId: string, input: CreateSourceDto): Promise<SourceDto> {
    // the validation pipe has run CreateSourceDto's @BodyPrecheck; callers that bypass it get the same answers
    if (input.type === 'upload') throw uploadSourceConflict();
    if (input.type === 'connector') throw connectorSourceRefused();
    if (input.type !== 'website' && input.type !== 'webpage') throw ApiError.field('type', 'must be website or webpage');

    const fields: FieldErrors = {};
    if (input.name === undefined) fields.name = ['is required'];
    Object.assign(fields, sourceConfigProblems(input.config));
    if (Object.keys(fields).length > 0) throw ApiError.validation(fields);

    const row = await this.db.transaction(async (tx) => {
      await this.enforceSourceCap(orgId, tx);
      return this.repository.insert(
        {
          id: newId('source'),
          orgId,
          type: input.type,
          name: input.name!,
          syncStatus: 'fetching',
          documentCount: null,
          config: sourceConfigRow(input.config),
        },
        tx,
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
    await this.db.transaction(async (tx) => {
      const row = await this.repository.findForUpdate(orgId, id, tx);
      if (!row) throw ApiError.notFound('Source');
      if (!(await this.repository.deleteWithDocuments(orgId, id, tx))) throw ApiError.notFound('Source');
      await this.repository.removeSourceFromAgents(orgId, id, tx);
      if (row.type === 'upload') await this.repository.insertUploadSingleton(orgId, tx);
    });
    return { id, deleted: true };
  }

  private async enforceSourceCap(orgId: string, tx: DbOrTx): Promise<void> {
    const limits = await this.orgs.lockLimits(orgId, tx);
    const cap = limits?.sources ?? null;
    if (cap === null) return;
    const used = await this.repository.countCapped(orgId, tx);
    if (used >= cap) {
      throw new ApiError(ErrorCode.ValidationFailed, `Plan limit reached: limits.sources allows ${cap} sources.`, {
        fields: { 'limits.sources': [`plan allows at most ${cap} sources (the upload source does not count)`] },
        limit: 'sources',
      });
    }
  }
}
