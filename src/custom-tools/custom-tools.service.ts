import { Inject, Injectable } from '@nestjs/common';
import { encryptJson } from '../../libs/crypto/crypto';
import { newId, parseId } from '../../libs/ids/ids';
import { ApiError, ErrorCode, type FieldErrors } from '../common/api-error';
import { uniqueViolationConstraint } from '../common/database-errors';
import type { Page } from '../common/envelope';
import { Paginator, type PaginationQuery } from '../common/pagination';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { OrgsRepository } from '../orgs/orgs.repository';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import type { CreateCustomToolDto, CustomToolDto, UpdateCustomToolDto } from './custom-tools.dto';
import { mapCustomTool } from './custom-tools.mapper';
import { CustomToolsRepository, type CustomToolChanges } from './custom-tools.repository';
import { definitionProblems, firstFreeToolName, groupRow, resolveAuth, resolveParameters, toolNameBase, type StoredCredentials } from './custom-tools.rules';

const NAME_UNIQUE = 'custom_tools_org_name_unique';
/** generated names are computed under the org lock; the retry covers rows written outside it (fixtures) */
const NAME_ATTEMPTS = 3;

export interface DeleteAcknowledgement {
  id: string;
  deleted: true;
}

function mergeFields(...all: FieldErrors[]): FieldErrors {
  const out: FieldErrors = {};
  for (const fields of all) for (const [key, problems] of Object.entries(fields)) (out[key] ??= []).push(...problems);
  return out;
}

@Injectable()
export class CustomToolsService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: CustomToolsRepository,
    private readonly orgs: OrgsRepository,
    private readonly paginator: Paginator,
  ) {}

  async listCustomTools(orgId: string, query: PaginationQuery): Promise<Page<CustomToolDto>> {
    const request = this.paginator.request('custom_tools', query);
    const rows = await this.repository.listPage(orgId, request);
    return this.paginator.page(rows, request).map(mapCustomTool);
  }

  async getCustomTool(orgId: string, rawId: string): Promise<CustomToolDto> {
    const id = parseId('customTool', rawId);
    const row = id ? await this.repository.findById(orgId, id) : null;
    if (!row) throw ApiError.notFound('Custom tool');
    return mapCustomTool(row);
  }

  async createCustomTool(orgId: string, input: CreateCustomToolDto): Promise<CustomToolDto> {
    const parameters = resolveParameters(input.parameters ?? [], input.method);
    const auth = resolveAuth(input.auth, null);
    const fields = mergeFields(
      definitionProblems({ method: input.method, url: input.url, headers: input.headers ?? {}, bodyTemplate: input.body_template ?? null, parameters }),
      auth.kind === 'invalid' ? auth.fields : {},
    );
    if (Object.keys(fields).length > 0 || auth.kind !== 'set') throw ApiError.validation(fields);

    const id = newId('customTool');
    const base = toolNameBase(input.label);
    for (let attempt = 1; ; attempt++) {
      try {
        const row = await this.db.transaction(async (tx) => {
          await this.enforceToolCap(orgId, tx);
          const name = firstFreeToolName(base, await this.repository.namesWithBase(orgId, base, tx));
          return this.repository.insert(
            {
              id,
              orgId,
              name,
              label: input.label,
              description: input.description,
              type: input.type ?? 'read',
              method: input.method,
              url: input.url,
              headers: input.headers ?? {},
              bodyTemplate: input.body_template ?? null,
              parameters,
              responseMapping: input.response_mapping ?? null,
              authType: auth.type,
              authHeaderName: auth.headerName,
              credentialsCiphertext: this.encrypt(auth.credentials, id),
              group: groupRow(input.group),
            },
            tx,
          );
        });
        return mapCustomTool(row);
      } catch (error) {
        if (attempt < NAME_ATTEMPTS && uniqueViolationConstraint(error) === NAME_UNIQUE) continue;
        throw error;
      }
    }
  }

  async updateCustomTool(orgId: string, rawId: string, input: UpdateCustomToolDto): Promise<CustomToolDto> {
    const id = parseId('customTool', rawId);
    if (!id) throw ApiError.notFound('Custom tool');
    const row = await this.db.transaction(async (tx) => {
      const current = await this.repository.findForUpdate(orgId, id, tx);
      if (!current) throw ApiError.notFound('Custom tool');

      const method = input.method ?? current.method;
      const parameters = input.parameters !== undefined ? resolveParameters(input.parameters, method) : current.parameters;
      const auth = resolveAuth(input.auth, { type: current.authType, headerName: current.authHeaderName });
      const fields = mergeFields(
        definitionProblems({
          method,
          url: input.url ?? current.url,
          headers: input.headers ?? current.headers,
          bodyTemplate: input.body_template !== undefined ? input.body_template : current.bodyTemplate,
          parameters,
        }),
        auth.kind === 'invalid' ? auth.fields : {},
      );
      if (Object.keys(fields).length > 0) throw ApiError.validation(fields);

      const changes: CustomToolChanges = {};
      if (input.label !== undefined) changes.label = input.label;
      if (input.description !== undefined) changes.description = input.description;
      if (input.type !== undefined) changes.type = input.type;
      if (input.method !== undefined) changes.method = input.method;
      if (input.url !== undefined) changes.url = input.url;
      if (input.headers !== undefined) changes.headers = input.headers;
      if (input.body_template !== undefined) changes.bodyTemplate = input.body_template;
      if (input.parameters !== undefined) changes.parameters = parameters;
      if (input.response_mapping !== undefined) changes.responseMapping = input.response_mapping;
      if (input.group !== undefined) changes.group = groupRow(input.group);
      if (input.is_active !== undefined) changes.isActive = input.is_active;
      if (auth.kind === 'set') {
        // spec: sending credentials rotates them; a type change without them was refused above
        changes.authType = auth.type;
        changes.authHeaderName = auth.headerName;
        changes.credentialsCiphertext = this.encrypt(auth.credentials, id);
      }
      return this.repository.update(orgId, id, changes, tx);
    });
    if (!row) throw ApiError.notFound('Custom tool');
    return mapCustomTool(row);
  }

  /** spec: hard delete; the tool also leaves every agent's `tools` array, in the same transaction. */
  async deleteCustomTool(orgId: string, rawId: string): Promise<DeleteAcknowledgement> {
    const id = parseId('customTool', rawId);
    if (!id) throw ApiError.notFound('Custom tool');
    await this.db.transaction(async (tx) => {
      const name = await this.repository.deleteReturningName(orgId, id, tx);
      if (name === null) throw ApiError.notFound('Custom tool');
      await this.repository.removeToolFromAgents(orgId, name, tx);
    });
    return { id, deleted: true };
  }

  /** Name generation for fixtures, in the loader's transaction. */
  async freeToolName(orgId: string, label: string, tx: DbOrTx): Promise<string> {
    const base = toolNameBase(label);
    return firstFreeToolName(base, await this.repository.namesWithBase(orgId, base, tx));
  }

  encrypt(credentials: StoredCredentials | null, toolId: string): string | null {
    // AAD = the tool id: a ciphertext copied onto another tool does not decrypt
    return credentials ? encryptJson(this.config.encryptionKey, credentials, toolId) : null;
  }

  private async enforceToolCap(orgId: string, tx: DbOrTx): Promise<void> {
    const limits = await this.orgs.lockLimits(orgId, tx);
    const cap = limits?.custom_tool_slots ?? null;
    if (cap === null) return;
    const used = await this.repository.countByOrg(orgId, tx);
    if (used >= cap) {
      throw new ApiError(
        ErrorCode.ValidationFailed,
        `Plan limit reached: limits.custom_tool_slots allows ${cap} custom tools.`,
        { fields: { 'limits.custom_tool_slots': [`plan allows at most ${cap} custom tools`] }, limit: 'custom_tool_slots' },
      );
    }
  }
}
