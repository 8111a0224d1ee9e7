import { Injectable } from '@nestjs/common';
import type { MemberDto } from './team.dto';
import { mapMember } from './team.mapper';
import { TeamRepository } from './team.repository';

@Injectable()
export class TeamService {
  constructor(private readonly repository: TeamRepository) {}

  async listMembers(orgId: string): Promise<MemberDto[]> {
    const rows = await this.repository.listByOrg(orgId);
    return rows.map(mapMember);
  }
}
