import { Injectable } from '@nestjs/common';
import { IsBoolean, IsEmail, IsIn, IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';
import { newId } from '../../libs/ids/ids';
import { fixtureDate, FixtureError, FixtureRegistry, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { MEMBER_ROLES } from './team.dto';
import { TeamRepository, type NewMemberRow } from './team.repository';
import { IsDateTime } from '../common/validation';

export class MemberFixture {
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) id?: string;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) user_id?: string;
  @IsOptional() @IsString() @MaxLength(200) name?: string | null;
  @IsEmail() email!: string;
  @IsIn(MEMBER_ROLES) role!: string;
  @IsOptional() @IsBoolean() is_active?: boolean;
  @IsOptional() @IsDateTime() last_login_at?: string | null;
  @IsOptional() @IsDateTime() created_at?: string | null;
}

@Injectable()
export class MembersFixtureSection extends RegisteredFixtureSection<NewMemberRow[]> {
  readonly name = 'members';
  readonly order = 10;
  readonly demoFile = 'src/team/team.demo.json';

  constructor(
    registry: FixtureRegistry,
    private readonly repository: TeamRepository,
  ) {
    super(registry);
  }

  parse(value: unknown, path: string, ctx: FixtureContext): NewMemberRow[] {
    const rows = this.parseRows(MemberFixture, value, path, ctx, (item) => {
      const createdAt = fixtureDate(item.created_at) ?? undefined;
      return {
        id: item.id ?? newId('member', createdAt),
        orgId: ctx.orgId,
        userId: item.user_id ?? newId('user', createdAt),
        name: item.name ?? null,
        email: item.email,
        role: item.role,
        isActive: item.is_active ?? true,
        lastLoginAt: fixtureDate(item.last_login_at),
        ...(createdAt ? { createdAt } : {}),
      };
    });
    const owners = new Set<string>();
    rows.forEach((row, index) => {
      if (owners.has(row.userId)) throw new FixtureError(`${path}[${index}].user_id`, `duplicate user_id ${row.userId}`);
      owners.add(row.userId);
    });
    return rows;
  }

  async write(orgId: string, rows: NewMemberRow[], ctx: FixtureContext): Promise<void> {
    this.requireAllWritten(rows, await this.repository.upsertMany(orgId, rows), 'member', (i) => this.itemPath(ctx, i));
  }
}
