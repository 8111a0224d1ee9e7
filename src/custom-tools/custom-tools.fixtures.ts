import { Injectable } from '@nestjs/common';
import { IntersectionType, OmitType, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { newId } from '../../libs/ids/ids';
import { BOUNDS, IsIdOf } from '../common/input-bounds';
import { firstProblem, fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { CustomToolAuthInputDto, CustomToolCreateDto, CustomToolCredentialsInputDto, CustomToolUpdateDto } from './custom-tools.dto';
import { CustomToolsRepository, type NewCustomToolRow } from './custom-tools.repository';
import { buildToolRow, type AuthInput, type StoredCredentials } from './custom-tools.rules';
import { CustomToolsService } from './custom-tools.service';
import { IsDateTime, OptionalNonNull } from '../common/validation';

/**
 * `auth` as POST takes it (`type`, `credentials`) or as GET shows it
 * (`type`, `header_name`): a fixture copied from either reads the same.
 */
class CustomToolAuthFixture extends CustomToolAuthInputDto {
  @IsOptional() @IsString() @MaxLength(BOUNDS.headerName) header_name?: string | null;
}

/**
 * A custom tool in a fixture: the fields POST /custom_tools takes, with their
 * rules (derived from the request DTOs, so the API and the loader cannot
 * judge a value differently), plus what PATCH writes (`is_active`), what a
 * response shows (`id`, `name`, `auth.header_name`, the timestamps) and
 * `credentials` beside `auth` (stored encrypted, never shown).
 */
class CustomToolFixture extends IntersectionType(OmitType(CustomToolCreateDto, ['auth'] as const), PickType(CustomToolUpdateDto, ['is_active'] as const)) {
  @IsOptional() @IsIdOf('customTool') id?: string;
  @IsOptional() @Matches(/^custom_[a-z0-9_]{1,64}$/, { message: 'must be custom_ followed by lowercase letters, digits and underscores' })
  name?: string;
  @OptionalNonNull() @IsObject() @ValidateNested() @Type(() => CustomToolAuthFixture) auth?: CustomToolAuthFixture;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CustomToolCredentialsInputDto) credentials?: CustomToolCredentialsInputDto;
  @IsOptional() @IsDateTime() created_at?: string | null;
  @IsOptional() @IsDateTime() updated_at?: string | null;
}

/** Fields only a fixture takes (the agreement test never spoils these). */
const CUSTOM_TOOL_FIXTURE_ONLY = ['id', 'name', 'credentials', 'is_active', 'created_at', 'updated_at'] as const;

/**
 * The fixture's `auth` + `credentials` as the API's `auth` input: the secrets
 * from `auth.credentials` or `credentials` (one place, not both), the api
 * key's header from either or from `auth.header_name`.
 */
function fixtureAuth(item: CustomToolFixture, at: string): AuthInput | undefined {
  if (item.auth === undefined && item.credentials === undefined) return undefined;
  if (item.auth?.credentials !== undefined && item.credentials !== undefined && item.credentials !== null) {
    throw new FixtureError(`${at}.credentials`, 'is given twice: here and in auth.credentials (keep one)');
  }
  const given = item.auth?.credentials ?? item.credentials;
  const headerName = given?.header_name ?? item.auth?.header_name ?? undefined;
  const credentials = given !== undefined || headerName !== undefined ? { ...given, header_name: headerName } : undefined;
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
    super({
      name: 'custom_tools',
      order: 30,
      demoFile: 'src/custom-tools/custom-tools.demo.json',
      agreesWith: { request: CustomToolCreateDto, item: CustomToolFixture, fixtureOnly: CUSTOM_TOOL_FIXTURE_ONLY },
    });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): ParsedTool[] {
    const names = new Set<string>();
    const parsed = this.parseRows(CustomToolFixture, value, path, ctx, (item, at): ParsedTool => {
      // the API's own row builder: defaults and rules identical to POST /custom_tools
      const built = buildToolRow({ ...item, auth: fixtureAuth(item, at) }, 'credentials');
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
