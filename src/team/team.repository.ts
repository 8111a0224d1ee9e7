import { Inject, Injectable } from '@nestjs/common';
import { desc, eq, sql } from 'drizzle-orm';
import { DATABASE, type Database, type DbOrTx } from '../database/database.types';
import { upsertOrgRow } from '../database/org-scoped-upsert';
import { members } from '../database/schema';
import type { MemberRow } from './team.mapper';

export type NewMemberRow = typeof members.$inferInsert;

@Injectable()
export class TeamRepository {
  private readonly byOrg;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.byOrg = db
      .select()
      .from(members)
      .where(eq(members.orgId, sql.placeholder('orgId')))
      .orderBy(desc(members.id))
      .prepare('members_by_org');
  }

  listByOrg(orgId: string): Promise<MemberRow[]> {
    return this.byOrg.execute({ orgId });
  }

  async upsertMany(orgId: string, rows: NewMemberRow[], tx: DbOrTx = this.db): Promise<void> {
    for (const row of rows) await upsertOrgRow(tx, members, orgId, row);
  }
}
