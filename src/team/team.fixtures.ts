import { Injectable } from '@nestjs/common';
import { IsBoolean, IsEmail, IsIn, IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';
import { newId } from '../../libs/ids/ids';
import { fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { MEMBER_ROLES } from './team.dto';
import { TeamRepository, type NewMemberRow } from './team.repository';
import { IsDateTime } from '../common/validation';

class MemberFixture {
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
  constructor(private readonly repository: TeamRepository) {
    super({ name: 'members', order: 10, demoFile: 'src/team/team.demo.json' });
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
    await this.writeRows(ctx, rows, 'member', (batch) => this.repository.upsertMany(orgId, batch));
  }
}
