import { Injectable } from '@nestjs/common';
import { desc, eq, sql } from 'drizzle-orm';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { upsertOrgRowsOneByOne } from '../database/org-scoped-upsert';
import { members } from './team.table';
import type { MemberRow } from './team.mapper';
import { prepareNamed } from '../database/prepared-statements';

export type NewMemberRow = typeof members.$inferInsert;

@Injectable()
export class TeamRepository {
  private readonly byOrg;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.byOrg = prepareNamed(txHost, 'members_by_org', (db) =>
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
    return upsertOrgRowsOneByOne(this.txHost.tx, members, orgId, rows);
  }
}
