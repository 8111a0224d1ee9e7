import { Inject, Injectable } from '@nestjs/common';
import { encryptJson } from '../../libs/crypto/crypto';
import { newId, parseId } from '../../libs/ids/ids';
import { accepted, ApiError } from '../common/api-error';
import { uniqueViolationConstraint } from '../database/database-errors';
import type { Page } from '../common/envelope';
import { Paginator, type PaginationQuery } from '../common/pagination';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { OrgsRepository } from '../orgs/orgs.repository';
import { checkCountCap } from '../orgs/plan-limits';
import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import type { DeleteAcknowledgementDto } from '../common/delete-ack.dto';
import type { CustomToolCreateDto, CustomToolDto, CustomToolUpdateDto } from './custom-tools.dto';
import { mapCustomTool } from './custom-tools.mapper';
import { CustomToolsRepository, type CustomToolChanges } from './custom-tools.repository';
import type { LockedRepresentation } from '../conditional/conditional.decorators';
import { buildToolChanges, buildToolRow, firstFreeToolName, toolNameBase, type StoredCredentials } from './custom-tools.rules';

const NAME_UNIQUE = 'custom_tools_org_name_unique';
/** generated names are computed under the org lock; the retry covers rows written outside it (fixtures) */
const NAME_ATTEMPTS = 3;

@Injectable()
export class CustomToolsService implements LockedRepresentation {
  constructor(
    private readonly txHost: TransactionHost<DatabaseTransactions>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: CustomToolsRepository,
    private readonly orgs: OrgsRepository,
    private readonly paginator: Paginator,
  ) {}

  async listCustomTools(orgId: string, query: PaginationQuery): Promise<Page<CustomToolDto>> {
    const request = this.paginator.pageRequest(query, { cursorNamespace: 'custom_tools' });
    const rows = await this.repository.listPage(orgId, request);
    return this.paginator.page(rows, request).map(mapCustomTool);
  }

  async getCustomTool(orgId: string, rawId: string): Promise<CustomToolDto> {
    const id = parseId('customTool', rawId);
    const row = id ? await this.repository.findById(orgId, id) : null;
    if (!row) throw ApiError.notFound('Custom tool');
    return mapCustomTool(row);
  }

  /** The tool as GET answers it, locked until the transaction ends (If-Match on PATCH and DELETE). */
  async lockedRepresentation(orgId: string, rawId: string): Promise<CustomToolDto | null> {
    const id = parseId('customTool', rawId);
    const row = id ? await this.repository.findForUpdate(orgId, id) : null;
    return row ? mapCustomTool(row) : null;
  }

  async createCustomTool(orgId: string, input: CustomToolCreateDto): Promise<CustomToolDto> {
    const built = accepted(buildToolRow(input));

    const id = newId('customTool');
    const base = toolNameBase(input.label);
    for (let attempt = 1; ; attempt++) {
      try {
        // a savepoint inside a keyed request's transaction: a taken name rolls back this attempt alone, the next one goes on
        const row = await this.txHost.withTransaction(Propagation.Nested, async () => {
          await this.enforceToolCap(orgId);
          const name = firstFreeToolName(base, await this.repository.namesWithBase(orgId, base));
          return this.repository.insert({ ...built.value, id, orgId, name, credentialsCiphertext: this.encrypt(built.credentials, id) });
        });
        return mapCustomTool(row);
      } catch (error) {
        if (attempt < NAME_ATTEMPTS && uniqueViolationConstraint(error) === NAME_UNIQUE) continue;
        throw error;
      }
    }
  }

  async updateCustomTool(orgId: string, rawId: string, input: CustomToolUpdateDto): Promise<CustomToolDto> {
    const id = parseId('customTool', rawId);
    if (!id) throw ApiError.notFound('Custom tool');
    const row = await this.txHost.withTransaction(async () => {
      const current = await this.repository.findForUpdate(orgId, id);
      if (!current) throw ApiError.notFound('Custom tool');
      const built = accepted(buildToolChanges(current, input));
      const changes: CustomToolChanges = { ...built.value };
      if (input.is_active !== undefined) changes.isActive = input.is_active;
      // a fresh credentials object rotates them; a new type without one drops the old secrets
      if (built.credentials !== undefined) changes.credentialsCiphertext = this.encrypt(built.credentials, id);
      return this.repository.update(orgId, id, changes);
    });
    if (!row) throw ApiError.notFound('Custom tool');
    return mapCustomTool(row);
  }

  /** Hard delete; the tool also leaves every agent's `tools` array, in the same transaction. */
  async deleteCustomTool(orgId: string, rawId: string): Promise<DeleteAcknowledgementDto> {
    const id = parseId('customTool', rawId);
    if (!id) throw ApiError.notFound('Custom tool');
    await this.txHost.withTransaction(async () => {
      const name = await this.repository.deleteReturningName(orgId, id);
      if (name === null) throw ApiError.notFound('Custom tool');
      await this.repository.removeToolFromAgents(orgId, name);
    });
    return { id, deleted: true };
  }

  /** Name generation for fixtures, in the loader's transaction. */
  async freeToolName(orgId: string, label: string): Promise<string> {
    const base = toolNameBase(label);
    return firstFreeToolName(base, await this.repository.namesWithBase(orgId, base));
  }

  encrypt(credentials: StoredCredentials | null, toolId: string): string | null {
    // AAD = the tool id: a ciphertext copied onto another tool does not decrypt
    return credentials ? encryptJson(this.config.encryptionKey, credentials, toolId) : null;
  }

  private async enforceToolCap(orgId: string): Promise<void> {
    const limits = await this.orgs.lockLimits(orgId);
    await checkCountCap('custom_tool_slots', limits?.custom_tool_slots, () => this.repository.countByOrg(orgId), 'custom tools');
  }
}
