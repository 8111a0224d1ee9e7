import { Inject, Injectable } from '@nestjs/common';
import { and, count, eq, getTableColumns, isNull, sql } from 'drizzle-orm';
import type { PageRequest } from '../common/pagination';
import { DATABASE, type Database } from '../database/database.types';
import { orgScopedReads } from '../database/org-scoped-reads';
import { upsertOrgRowsOneByOne } from '../database/org-scoped-upsert';
import { agents } from '../database/schema';
import type { AgentRow } from './agents.mapper';
import { prepareNamed } from '../database/prepared-statements';

export type NewAgentRow = typeof agents.$inferInsert;
export type AgentChanges = Partial<Omit<NewAgentRow, 'id' | 'orgId' | 'createdAt' | 'deletedAt'>>;

const AGENT_COLUMNS = getTableColumns(agents);

/** PATCH sends any subset of ~12 plain fields (POST likewise); clients use a handful of shapes, and past this bound a shape is built per request. */
const MAX_PREPARED_SHAPES = 64;

/** Agents of one organization; soft-deleted agents are invisible to every method but the fixture upsert. */
@Injectable()
export class AgentsRepository {
  private readonly live;

  constructor(@Inject(DATABASE) private readonly db: Database) {
    this.live = orgScopedReads(db, agents, { statementPrefix: 'agents_live', where: isNull(agents.deletedAt) });
  }

  findLive(orgId: string, id: string): Promise<AgentRow | null> {
    return this.live.findById(orgId, id);
  }

  /** Newest first (ids start with their creation time); `page.fetch` is limit + 1. */
  listLive(orgId: string, page: PageRequest): Promise<AgentRow[]> {
    return this.live.listPage(orgId, page);
  }

  /** Locks a live agent for the rest of the transaction, so concurrent PATCH/DELETE of it run one after the other. */
  async lockLive(orgId: string, id: string): Promise<AgentRow | null> {
    const [row] = await this.db
      .select()
      .from(agents)
      .where(and(eq(agents.orgId, orgId), eq(agents.id, id), isNull(agents.deletedAt)))
      .for('update');
    return row ?? null;
  }

  async countLive(orgId: string): Promise<number> {
    const [row] = await this.db
      .select({ n: count() })
      .from(agents)
      .where(and(eq(agents.orgId, orgId), isNull(agents.deletedAt)));
    return Number(row?.n ?? 0);
  }

  /**
   * One prepared INSERT per set of columns (building it cost more than the
   * UPDATE's); like every query, it runs in the open transaction, if any.
   */
  async insert(orgId: string, row: NewAgentRow): Promise<AgentRow> {
    const values: Record<string, unknown> = { ...row, orgId };
    const columns = Object.keys(values).filter((column) => values[column] !== undefined) as Array<keyof NewAgentRow>;
    const prepared = this.preparedInsert(columns, values);
    if (prepared) {
      const params: Record<string, unknown> = {};
      for (const column of columns) if (values[column] !== null) params[column] = values[column];
      const [created] = await prepared.execute(params);
      return created;
    }
    const [created] = await this.db
      .insert(agents)
      .values({ ...row, orgId })
      .returning();
    return created;
  }

  private readonly inserts = new Map<string, ReturnType<AgentsRepository['prepareInsert']>>();

  private preparedInsert(columns: Array<keyof NewAgentRow>, values: Record<string, unknown>) {
    const nulls = columns.map((column) => values[column] === null);
    const shape = columns.map((column, i) => (nulls[i] ? `${column}=null` : column)).join(',');
    let prepared = this.inserts.get(shape);
    if (!prepared && this.inserts.size < MAX_PREPARED_SHAPES && columns.every((column) => column in AGENT_COLUMNS)) {
      prepared = this.prepareInsert(columns, nulls, `agents_insert_${this.inserts.size}`);
      this.inserts.set(shape, prepared);
    }
    return prepared;
  }

  private prepareInsert(columns: Array<keyof NewAgentRow>, nulls: boolean[], name: string) {
    return prepareNamed(
      this.db,
      name,
      this.db
        .insert(agents)
        .values(Object.fromEntries(columns.map((column, i) => [column, nulls[i] ? sql`null` : sql.placeholder(column)])) as unknown as NewAgentRow)
        .returning(),
    );
  }

  /**
   * The live agent's new state, or undefined when it is gone. One prepared
   * statement per set of changed columns (building the UPDATE cost about
   * 0.5 ms per request); like every query, it runs in the open transaction.
   */
  async update(orgId: string, id: string, changes: AgentChanges): Promise<AgentRow | undefined> {
    const columns = (Object.keys(changes) as Array<keyof AgentChanges>).filter((column) => changes[column] !== undefined);
    const prepared = this.preparedUpdate(columns, changes);
    if (prepared) {
      // drizzle maps each placeholder's value through its column (dates, jsonb) as it fills it
      const values: Record<string, unknown> = { orgId, id };
      for (const column of columns) if (changes[column] !== null) values[column] = changes[column];
      const [updated] = await prepared.execute(values);
      return updated;
    }
    const [updated] = await this.db
      .update(agents)
      .set(changes)
      .where(and(eq(agents.orgId, orgId), eq(agents.id, id), isNull(agents.deletedAt)))
      .returning();
    return updated;
  }

  private readonly updates = new Map<string, ReturnType<AgentsRepository['prepareUpdate']>>();

  /**
   * The prepared UPDATE for this set of columns, each set to a value or to
   * null (a null is written into the statement: drizzle would map it through
   * the column, and a timestamp's mapping fails on null); none past
   * {@link MAX_PREPARED_SHAPES} shapes.
   */
  private preparedUpdate(columns: Array<keyof AgentChanges>, changes: AgentChanges) {
    const nulls = columns.map((column) => changes[column] === null);
    const shape = columns.map((column, i) => (nulls[i] ? `${column}=null` : column)).join(',');
    let prepared = this.updates.get(shape);
    if (!prepared && this.updates.size < MAX_PREPARED_SHAPES && columns.every((column) => column in AGENT_COLUMNS)) {
      prepared = this.prepareUpdate(columns, nulls, `agents_update_${this.updates.size}`);
      this.updates.set(shape, prepared);
    }
    return prepared;
  }

  private prepareUpdate(columns: Array<keyof AgentChanges>, nulls: boolean[], name: string) {
    return prepareNamed(
      this.db,
      name,
      this.db
        .update(agents)
        .set(Object.fromEntries(columns.map((column, i) => [column, nulls[i] ? sql`null` : sql.placeholder(column)])) as AgentChanges)
        .where(and(eq(agents.orgId, sql.placeholder('orgId')), eq(agents.id, sql.placeholder('id')), isNull(agents.deletedAt)))
        .returning(),
    );
  }

  async softDelete(orgId: string, id: string, now: Date): Promise<void> {
    await this.db
      .update(agents)
      .set({ deletedAt: now, updatedAt: now })
      .where(and(eq(agents.orgId, orgId), eq(agents.id, id), isNull(agents.deletedAt)));
  }

  /**
   * Fixture load: upsert by id, never touching another organization's row;
   * returns the ids written. Rows go one by one: a fixture's agents may carry
   * different column sets, which one multi-row statement would not keep apart.
   */
  upsertMany(orgId: string, rows: NewAgentRow[]): Promise<string[]> {
    return upsertOrgRowsOneByOne(this.db, agents, orgId, rows);
  }
}
