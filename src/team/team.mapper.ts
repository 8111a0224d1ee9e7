import type { members } from './team.table';
import { iso } from '../common/iso';
import type { MemberDto } from './team.dto';

export type MemberRow = typeof members.$inferSelect;

export function mapMember(row: MemberRow): MemberDto {
  return {
    id: row.id,
    user_id: row.userId,
    name: row.name,
    email: row.email,
    role: row.role,
    is_active: row.isActive,
    last_login_at: iso(row.lastLoginAt),
    created_at: iso(row.createdAt),
  };
}
