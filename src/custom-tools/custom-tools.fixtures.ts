import { Injectable } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { newId } from '../../libs/ids/ids';
import type { Transaction } from '../database/database.types';
import { declareIds, fixtureDate, FixtureError, FixtureRegistry, parseFixtureArray, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { CustomToolCredentialsInput, CustomToolGroupInput, CustomToolParamInput } from './custom-tools.dto';
import { CustomToolsRepository, type NewCustomToolRow } from './custom-tools.repository';
import {
  AUTH_TYPES,
  DEFAULT_API_KEY_HEADER,
  definitionProblems,
  groupRow,
  HTTP_METHODS,
  MAX_PARAMETERS,
  resolveAuth,
  resolveParameters,
  TOOL_TYPES,
  type StoredCredentials,
} from './custom-tools.rules';
import { CustomToolsService } from './custom-tools.service';
import { IsDateTime } from '../common/validation';

export class CustomToolAuthFixture {
  @IsIn(AUTH_TYPES) type!: string;
  @IsOptional() @IsString() @MaxLength(128) header_name?: string | null;
}

/** A CustomTool as the API shows it, plus `credentials` (stored encrypted). */
export class CustomToolFixture {
  @IsOptional() @Matches(/^tool_[a-f0-9]{24}$/, { message: 'must be tool_<24 lowercase hex>' }) id?: string;
  @IsOptional() @Matches(/^custom_[a-z0-9_]{1,64}$/, { message: 'must be custom_ followed by lowercase letters, digits and underscores' })
  name?: string;
  @IsString() @IsNotEmpty() @MaxLength(200) label!: string;
  @IsString() @IsNotEmpty() @MaxLength(4000) description!: string;
  @IsOptional() @IsIn(TOOL_TYPES) type?: string;
  @IsIn(HTTP_METHODS) method!: string;
  @IsString() @MaxLength(2048) url!: string;
  @IsOptional() @IsObject() headers?: Record<string, string>;
  @IsOptional() @IsString() @MaxLength(16384) body_template?: string | null;
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_PARAMETERS)
  @ValidateNested({ each: true })
  @Type(() => CustomToolParamInput)
  parameters?: CustomToolParamInput[];
  @IsOptional() @IsString() @MaxLength(500) response_mapping?: string | null;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CustomToolAuthFixture) auth?: CustomToolAuthFixture;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CustomToolCredentialsInput) credentials?: CustomToolCredentialsInput;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CustomToolGroupInput) group?: CustomToolGroupInput | null;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

interface ParsedTool {
  /** row without credentials ciphertext; `name` is null when it is to be generated */
  row: Omit<NewCustomToolRow, 'name'> & { name: string | null };
  credentials: StoredCredentials | null;
  /** the fixture gave no id: a tool of the same explicit name is the same tool (re-seeding stays idempotent) */
  idGenerated: boolean;
}

@Injectable()
export class CustomToolsFixtureSection extends RegisteredFixtureSection<ParsedTool[]> {
  readonly name = 'custom_tools';
  readonly order = 30;
  readonly demoFile = 'src/custom-tools/custom-tools.demo.json';

  constructor(
    registry: FixtureRegistry,
    private readonly repository: CustomToolsRepository,
    private readonly service: CustomToolsService,
  ) {
    super(registry);
  }

  parse(value: unknown, path: string, ctx: FixtureContext): ParsedTool[] {
    const items = parseFixtureArray(CustomToolFixture, value, path);
    const names = new Set<string>();
    const parsed = items.map((item, index): ParsedTool => {
      const at = `${path}[${index}]`;
      const parameters = resolveParameters(item.parameters ?? [], item.method);
      const problems = definitionProblems({
        method: item.method,
        url: item.url,
        headers: item.headers ?? {},
        bodyTemplate: item.body_template ?? null,
        parameters,
      });
      const [field] = Object.keys(problems);
      if (field !== undefined) throw new FixtureError(`${at}.${field}`, problems[field][0]);

      const authType = item.auth?.type ?? 'none';
      let authHeaderName: string | null = null;
      let credentials: StoredCredentials | null = null;
      if (item.credentials !== undefined || authType === 'none') {
        const resolved = resolveAuth(
          {
            type: authType,
            credentials: item.credentials
              ? { ...item.credentials, header_name: item.credentials.header_name ?? item.auth?.header_name ?? undefined }
              : undefined,
          },
          null,
          `${at}.credentials`,
        );
        if (resolved.kind === 'invalid') {
          const [bad] = Object.keys(resolved.fields);
          throw new FixtureError(bad, resolved.fields[bad][0]);
        }
        if (resolved.kind === 'set') {
          authHeaderName = resolved.headerName;
          credentials = resolved.credentials;
        }
      } else if (authType === 'api_key') {
        // a fixture may describe a tool whose secret is not shipped with it: stored without credentials
        authHeaderName = item.auth?.header_name ?? DEFAULT_API_KEY_HEADER;
      }

      if (item.name !== undefined) {
        if (names.has(item.name)) throw new FixtureError(`${at}.name`, `duplicate name ${item.name}`);
        names.add(item.name);
      }
      const createdAt = fixtureDate(item.created_at) ?? undefined;
      const updatedAt = fixtureDate(item.updated_at) ?? createdAt;
      return {
        row: {
          id: item.id ?? newId('customTool', createdAt),
          orgId: ctx.orgId,
          name: item.name ?? null,
          label: item.label,
          description: item.description,
          type: item.type ?? 'read',
          method: item.method,
          url: item.url,
          headers: item.headers ?? {},
          bodyTemplate: item.body_template ?? null,
          parameters,
          responseMapping: item.response_mapping ?? null,
          authType,
          authHeaderName,
          group: groupRow(item.group),
          isActive: item.is_active ?? true,
          ...(createdAt ? { createdAt } : {}),
          ...(updatedAt ? { updatedAt } : {}),
        },
        credentials,
        idGenerated: item.id === undefined,
      };
    });
    declareIds(ctx, 'custom_tools', parsed.map((tool) => tool.row.id!), path);
    return parsed;
  }

  async write(tx: Transaction, orgId: string, tools: ParsedTool[], ctx: FixtureContext): Promise<void> {
    // explicit names first, so a generated name never takes one the fixture spells out
    const ordered = [...tools.filter((tool) => tool.row.name !== null), ...tools.filter((tool) => tool.row.name === null)];
    for (const tool of ordered) {
      const { row, credentials, idGenerated } = tool;
      const generated = row.name === null;
      const name = row.name ?? (await this.service.freeToolName(orgId, row.label, tx));
      const id = (idGenerated && !generated ? await this.repository.findIdByName(orgId, name, tx) : null) ?? row.id!;
      const written = await this.repository.upsert(
        { ...row, id, orgId, name, credentialsCiphertext: this.service.encrypt(credentials, id) },
        tx,
        { keepName: generated },
      );
      this.requireAllWritten([{ id }], written ? [id] : [], 'custom tool', () => this.itemPath(ctx, tools.indexOf(tool)));
    }
  }
}
