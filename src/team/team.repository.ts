import { Inject, Injectable } from '@nestjs/common';
import { desc, eq, sql } from 'drizzle-orm';
import { DATABASE, type Database } from '../database/database.types';
import { upsertOrgRowsOneByOne } from '../database/org-scoped-upsert';
import { members } from '../database/schema';
import type { MemberRow } from './team.mapper';
import { prepareNamed } from '../database/prepared-statements';

export type NewMemberRow = typeof members.$inferInsert;

@Injectable()
export class TeamRepository {
  private readonly byOrg;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.byOrg = prepareNamed(
      db,
      'members_by_org',
      db
        .select()
        .from(members)
        .where(eq(members.orgId, sql.placeholder('orgId')))
        .orderBy(desc(members.id)),
    );
  }

  listByOrg(orgId: string): Promise<MemberRow[]> {
    return this.byOrg.execute({ orgId });
  }

  /** Fixture load: returns the ids written (another organization's ids are not). */
  upsertMany(orgId: string, rows: NewMemberRow[]): Promise<string[]> {
    return upsertOrgRowsOneByOne(this.db, members, orgId, rows);
  }
}
