import { Injectable } from '@nestjs/common';
import { eq, sql } from 'drizzle-orm';
import { newId } from '../../libs/ids/ids';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { orgs, type OrgLimits } from '../database/orgs.table';
import { sources } from '../database/sources.table';
import type { OrgRow } from './orgs.mapper';
import { prepareNamed } from '../database/prepared-statements';

type NewOrgRow = typeof orgs.$inferInsert;

@Injectable()
export class OrgsRepository {
  private readonly byId;
  private readonly limitsLocked;

  constructor(private readonly txHost: TransactionHost<DatabaseTransactions>) {
    this.byId = prepareNamed(txHost, 'orgs_by_id', (db) => db.select().from(orgs).where(eq(orgs.id, sql.placeholder('orgId'))));
    // prepared: every create of every organization takes it
    this.limitsLocked = prepareNamed(txHost, 'orgs_limits_locked', (db) =>
      db.select({ limits: orgs.limits }).from(orgs).where(eq(orgs.id, sql.placeholder('orgId'))).for('no key update'),
    );
  }

  async findById(orgId: string): Promise<OrgRow | null> {
    const [row] = await this.byId.execute({ orgId });
    return row ?? null;
  }

  /** The organization with this slug (fixture loads match organizations given without an id; deliberately across organizations). */
  async findIdBySlug(slug: string): Promise<string | null> {
    const [row] = await this.txHost.tx.select({ id: orgs.id }).from(orgs).where(eq(orgs.slug, slug));
    return row?.id ?? null;
  }

  /** Whether any organization exists (first-run detection; deliberately across organizations). */
  async anyExists(): Promise<boolean> {
    const rows = await this.txHost.tx.select({ id: orgs.id }).from(orgs).limit(1);
    return rows.length > 0;
  }

  async upsert(row: NewOrgRow): Promise<void> {
    const { id: _id, createdAt: _createdAt, ...changes } = row;
    await this.txHost.tx
      .insert(orgs)
      .values(row)
      .onConflictDoUpdate({ target: orgs.id, set: { ...changes, updatedAt: new Date() } });
  }

  /**
   * The organization's plan caps, its row locked until the transaction ends:
   * creates of one organization (agents, sources, custom tools) queue here, so
   * a cap and a generated name cannot be raced past. `no key update` rather
   * than `update`: it serializes these creates (and PATCH /org) without
   * blocking the foreign-key checks of other inserts into the organization's
   * tables. The one place this lock is taken.
   */
  async lockLimits(orgId: string): Promise<OrgLimits | null> {
    const [row] = await this.limitsLocked.execute({ orgId });
    return row?.limits ?? null;
  }

  /** The upload source is an organization-wide singleton created with the organization */
  async ensureUploadSource(orgId: string): Promise<void> {
    await this.txHost.tx
      .insert(sources)
      .values({ id: newId('source'), orgId, type: 'upload', name: 'Uploaded files', syncStatus: 'ready', documentCount: 0 })
      .onConflictDoNothing({ target: sources.orgId, where: sql`${sources.type} = 'upload'` });
  }
}
