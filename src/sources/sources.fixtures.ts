import { Injectable } from '@nestjs/common';
import { PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { newId } from '../../libs/ids/ids';
import { declareIds, firstProblem, fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { SOURCE_TYPES, SourceCreateDto, SYNC_STATUSES } from './sources.dto';
import { SourcesRepository, UPLOAD_SOURCE_NAME, type NewDocumentRow, type NewSourceRow } from './sources.repository';
import { buildSourceConfig } from './sources.rules';
import { BOUNDS, IsIdOf } from '../common/input-bounds';
import { IsDateTime } from '../common/validation';

class DocumentFixture {
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(128) id?: string;
  @IsString() @IsNotEmpty() @MaxLength(500) name!: string;
  @IsOptional() @IsDateTime() created_at?: string | null;
}

/**
 * A source in a fixture: `name` and `config` as POST /sources takes them
 * (derived from the request DTO, so the API and the loader cannot judge a
 * value differently), plus what a response shows, the `documents` an agent
 * may select and `type` among all four (a fixture describes the upload and
 * connector sources POST refuses to create).
 */
class SourceFixture extends PickType(SourceCreateDto, ['name', 'config'] as const) {
  @IsOptional() @IsIdOf('source') id?: string;
  @IsIn(SOURCE_TYPES) type!: string;
  @IsOptional() @IsString() @MaxLength(BOUNDS.id) connector_id?: string | null;
  @IsOptional() @IsString() @MaxLength(64) connector_type?: string | null;
  @IsOptional() @IsIn(SYNC_STATUSES) sync_status?: string;
  @IsOptional() @IsDateTime() last_sync_at?: string | null;
  @IsOptional() @IsInt() @Min(0) document_count?: number | null;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => DocumentFixture) documents?: DocumentFixture[];
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

/** Fields only a fixture takes, or takes with values POST /sources refuses (the agreement test never spoils these). */
const SOURCE_FIXTURE_ONLY = [
  'id',
  'type',
  'connector_id',
  'connector_type',
  'sync_status',
  'last_sync_at',
  'document_count',
  'is_active',
  'documents',
  'created_at',
  'updated_at',
] as const;

interface ParsedSource {
  /** null id: the upload singleton without an id in the fixture, upserted onto the existing one */
  source: Omit<NewSourceRow, 'id'> & { id: string | null };
  documents: Array<Omit<NewDocumentRow, 'sourceId'>>;
}

@Injectable()
export class SourcesFixtureSection extends RegisteredFixtureSection<ParsedSource[]> {
  constructor(private readonly repository: SourcesRepository) {
    super({
      name: 'sources',
      order: 30,
      demoFile: 'src/sources/sources.demo.json',
      agreesWith: { request: SourceCreateDto, item: SourceFixture, fixtureOnly: SOURCE_FIXTURE_ONLY },
    });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): ParsedSource[] {
    const connectors = ctx.declared.get('connectors');
    let uploadIndex: number | null = null;
    return this.parseRows(SourceFixture, value, path, ctx, (item, at, index): ParsedSource => {
      if (item.type === 'upload') {
        if (uploadIndex !== null) throw new FixtureError(`${at}.type`, `the upload source is a singleton; already given at ${path}[${uploadIndex}]`);
        uploadIndex = index;
      } else if (item.name === undefined) {
        throw new FixtureError(`${at}.name`, 'is required');
      }
      // as for triggers: connectors declared in this fixture are checked; ids of connectors already stored are taken as given
      if (item.connector_id && connectors?.size && !connectors.has(item.connector_id)) {
        throw new FixtureError(`${at}.connector_id`, `unknown connector ${item.connector_id}`);
      }
      // the API's rules, except that `url` may be absent (the Source shape the API shows has no config)
      const config = buildSourceConfig(item.type, item.config, `${at}.config`, { requireUrl: false });
      if (!config.ok) throw firstProblem(config.fields);
      const createdAt = fixtureDate(item.created_at) ?? undefined;
      const updatedAt = fixtureDate(item.updated_at) ?? createdAt;
      const docs = (item.documents ?? []).map((doc) => {
        const docCreated = fixtureDate(doc.created_at) ?? undefined;
        return { id: doc.id ?? newId('document', docCreated), orgId: ctx.orgId, name: doc.name, ...(docCreated ? { createdAt: docCreated } : {}) };
      });
      declareIds(ctx, 'documents', docs.map((doc) => doc.id), `${at}.documents`);
      return {
        source: {
          id: item.id ?? (item.type === 'upload' ? null : newId('source', createdAt)),
          orgId: ctx.orgId,
          type: item.type,
          name: item.name ?? UPLOAD_SOURCE_NAME,
          connectorId: item.connector_id ?? null,
          connectorType: item.connector_type ?? null,
          syncStatus: item.sync_status ?? 'ready',
          lastSyncAt: fixtureDate(item.last_sync_at),
          // as the sync pipeline reports it; without a value, the documents given (or none)
          documentCount: item.document_count !== undefined ? item.document_count : item.documents ? docs.length : item.type === 'upload' ? 0 : null,
          isActive: item.is_active ?? true,
          config: config.value,
          ...(createdAt ? { createdAt } : {}),
          ...(updatedAt ? { updatedAt } : {}),
        },
        documents: docs,
      };
    }, (entry) => entry.source.id);
  }

  async write(orgId: string, entries: ParsedSource[], ctx: FixtureContext): Promise<void> {
    for (const [index, { source, documents }] of entries.entries()) {
      const at = this.itemPath(ctx, index);
      let id = source.id;
      if (source.type === 'upload') {
        // the organization's upsert has already ensured a singleton: the fixture's upload source lands on it
        const existing = await this.repository.findUpload(orgId);
        if (existing && id === null) id = existing.id;
        else if (existing && existing.id !== id) await this.repository.deleteWithDocuments(orgId, existing.id);
        id ??= newId('source');
      }
      const written = await this.repository.upsert({ ...source, id: id!, orgId });
      this.requireAllWritten([{ id: id! }], written ? [id!] : [], 'source', () => at);
      const rows = documents.map((doc) => ({ ...doc, orgId, sourceId: id! }));
      this.requireAllWritten(rows, await this.repository.upsertDocuments(orgId, rows), 'document', (i) => `${at}.documents[${i}]`);
    }
  }
}
