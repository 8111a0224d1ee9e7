import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, Matches, MaxLength, Min, ValidateNested } from 'class-validator';
import { ORG_STATUSES } from './orgs.dto';
import { IsIdOf } from '../common/input-bounds';
import { IsDateTime } from '../common/validation';

export class CreditsFixture {
  @IsInt() @Min(0) total!: number;
  @IsInt() @Min(0) used!: number;
  @IsInt() @Min(0) remaining!: number;
  @IsOptional() @IsInt() @Min(0) top_up?: number;
  @IsOptional() @IsDateTime() reset_at?: string | null;
}

export class LimitsFixture {
  @IsOptional() @IsInt() @Min(0) agents?: number | null;
  @IsOptional() @IsInt() @Min(0) connectors?: number | null;
  @IsOptional() @IsInt() @Min(0) sources?: number | null;
  @IsOptional() @IsInt() @Min(0) chatbots?: number | null;
  @IsOptional() @IsInt() @Min(0) scheduled_triggers?: number | null;
  @IsOptional() @IsInt() @Min(0) custom_tool_slots?: number | null;
}

export class TrialFixture {
  @IsOptional() @IsDateTime() start_date?: string | null;
  @IsOptional() @IsDateTime() end_date?: string | null;
}

/**
 * The organization's own fields in a fixture. Its sections
 * (`api_keys`, `members`, `agents`, …) are validated by their modules.
 */
export class OrgFixture {
  @IsOptional() @IsIdOf('org') id?: string;
  @IsString() @IsNotEmpty() @MaxLength(200) name!: string;
  @IsOptional() @Matches(/^[a-z0-9][a-z0-9-]{0,62}$/, { message: 'must be lowercase letters, digits and dashes' }) slug?: string;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(64) plan?: string;
  @IsOptional() @IsIn(ORG_STATUSES) status?: string;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => CreditsFixture) credits?: CreditsFixture;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => LimitsFixture) limits?: LimitsFixture;
  @IsOptional() @IsObject() @ValidateNested() @Type(() => TrialFixture) trial?: TrialFixture | null;
  @IsOptional() @IsDateTime() created_at?: string | null;
}
