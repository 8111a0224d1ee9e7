import { Injectable } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsObject, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { newId } from '../../libs/ids/ids';
import { BOUNDS, IsIdOf } from '../common/input-bounds';
import { firstProblem, fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { CustomToolCreateDto, CustomToolCredentialsInputDto } from './custom-tools.dto';
import { CustomToolsRepository, type NewCustomToolRow } from './custom-tools.repository';
import { AUTH_TYPES, buildToolRow, type AuthInput, type StoredCredentials } from './custom-tools.rules';
import { CustomToolsService } from './custom-tools.service';
import { IsDateTime } from '../common/validation';

/** `auth` as the API shows it. */
class CustomToolAuthFixture {
  @IsIn(AUTH_TYPES) type!: string;
  @IsOptional() @IsString() @MaxLength(BOUNDS.headerName) header_name?: string | null;
}

/**
 * A CustomTool as the API shows it, plus `credentials` (stored encrypted).
 * The definition fields are the API's request DTO, so each is validated
 * exactly as POST /custom_tools validates it.
 */
class CustomToolFixture extends CustomToolCreateDto {
  @IsOptional() @IsIdOf('customTool') id?: string;
  @IsOptional() @Matches(/^custom_[a-z0-9_]{1,64}$/, { message: 'must be custom_ followed by lowercase letters, digits and underscores' })
  name?: string;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CustomToolAuthFixture) override auth?: CustomToolAuthFixture = undefined;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CustomToolCredentialsInputDto) credentials?: CustomToolCredentialsInputDto;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

/** The fixture's `auth` + `credentials` as the API's `auth` input: `auth.header_name` is the api key's header. */
function fixtureAuth(item: CustomToolFixture): AuthInput | undefined {
  if (item.auth === undefined && item.credentials === undefined) return undefined;
  const headerName = item.credentials?.header_name ?? item.auth?.header_name ?? undefined;
  const credentials = item.credentials !== undefined || headerName !== undefined ? { ...item.credentials, header_name: headerName } : undefined;
  return { type: item.auth?.type ?? 'none', credentials };
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
  constructor(
    private readonly repository: CustomToolsRepository,
    private readonly service: CustomToolsService,
  ) {
    super({ name: 'custom_tools', order: 30, demoFile: 'src/custom-tools/custom-tools.demo.json' });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): ParsedTool[] {
    const names = new Set<string>();
    const parsed = this.parseRows(CustomToolFixture, value, path, ctx, (item, at): ParsedTool => {
      // the API's own row builder: defaults and rules identical to POST /custom_tools
      const built = buildToolRow({ ...item, auth: fixtureAuth(item) }, 'credentials');
      if (!built.ok) throw firstProblem(built.fields, at);

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
          ...built.value,
          isActive: item.is_active ?? true,
          ...(createdAt ? { createdAt } : {}),
          ...(updatedAt ? { updatedAt } : {}),
        },
        credentials: built.credentials ?? null,
        idGenerated: item.id === undefined,
      };
    }, (tool) => tool.row.id);
    return parsed;
  }

  async write(orgId: string, tools: ParsedTool[], ctx: FixtureContext): Promise<void> {
    // explicit names first, so a generated name never takes one the fixture spells out
    const ordered = [...tools.filter((tool) => tool.row.name !== null), ...tools.filter((tool) => tool.row.name === null)];
    for (const tool of ordered) {
      const { row, credentials, idGenerated } = tool;
      const generated = row.name === null;
      const name = row.name ?? (await this.service.freeToolName(orgId, row.label));
      const id = (idGenerated && !generated ? await this.repository.findIdByName(orgId, name) : null) ?? row.id!;
      const written = await this.repository.upsert(
        { ...row, id, orgId, name, credentialsCiphertext: this.service.encrypt(credentials, id) },
        { keepName: generated },
      );
      this.requireAllWritten([{ id }], written ? [id] : [], 'custom tool', () => this.itemPath(ctx, tools.indexOf(tool)));
    }
  }
}
