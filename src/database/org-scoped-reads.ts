import { and, desc, eq, lt, sql, type InferModelFromColumns, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { PageRequest } from '../common/pagination';
import type { Database } from './database.types';
import { prepareNamed, type TransactionSource } from './prepared-statements';

/**
 * The prepared point read and keyset pages every organization-scoped resource
 * needs, written once. For repositories only (they own the SQL): each one
 * wraps these in its own typed methods.
 */

/** A table of one organization's rows, keyed by an id that sorts by creation time. */
export type OrgScopedTable = PgTable & { id: PgColumn; orgId: PgColumn };

type Columns = Record<string, PgColumn>;
/** The row a read returns: the chosen columns, or the whole table. */
type RowOf<TColumns extends Columns> = InferModelFromColumns<TColumns>;

interface OrgScopedReadOptions<TColumns extends Columns> {
  /**
   * The start of the prepared statements' names (`<prefix>_by_id`,
   * `<prefix>_first_page`, `<prefix>_next_page`). Statement names belong to
   * the connection, so each set of reads needs a prefix of its own, e.g. the
   * table's name; a second reads over other columns or conditions of the same
   * table takes another (`agents_live`). A prefix already used for other SQL
   * fails at start-up (prepareNamed).
   */
  statementPrefix: string;
  /** The columns to return; all of the table when left out. */
  columns?: TColumns;
  /** A further condition every read applies, e.g. "not soft-deleted". */
  where?: SQL;
}

interface OrgScopedById<Row> {
  /** The row with this id in this organization, or null (another organization's id is not found). */
  findById(orgId: string, id: string): Promise<Row | null>;
}

interface OrgScopedPages<Row> {
  /** Newest first, keyset on id (ids start with their creation time); fetches `page.fetch` rows. */
  listPage(orgId: string, page: PageRequest): Promise<Row[]>;
}

type OrgScopedReads<Row> = OrgScopedById<Row> & OrgScopedPages<Row>;

function select(db: Database, table: OrgScopedTable, columns: Columns | undefined) {
  return (columns ? db.select(columns) : db.select()).from(table);
}

/** `where org_id = $orgId and id = $id`, prepared as `<statementPrefix>_by_id`. */
export function orgScopedById<T extends OrgScopedTable, TColumns extends Columns = T['_']['columns']>(
  transactions: TransactionSource,
  table: T,
  options: OrgScopedReadOptions<TColumns>,
): OrgScopedById<RowOf<TColumns>> {
  const byId = prepareNamed(transactions, `${options.statementPrefix}_by_id`, (db) =>
    select(db, table, options.columns).where(and(eq(table.orgId, sql.placeholder('orgId')), options.where, eq(table.id, sql.placeholder('id')))),
  );
  return {
    async findById(orgId, id) {
      const [row] = await byId.execute({ orgId, id });
      return (row as RowOf<TColumns> | undefined) ?? null;
    },
  };
}

/**
 * `order by id desc limit $fetch`, after `id < $afterId` past the first page;
 * prepared as `<statementPrefix>_first_page` / `<statementPrefix>_next_page`.
 */
export function orgScopedPages<T extends OrgScopedTable, TColumns extends Columns = T['_']['columns']>(
  transactions: TransactionSource,
  table: T,
  options: OrgScopedReadOptions<TColumns>,
): OrgScopedPages<RowOf<TColumns>> {
  const inOrg = eq(table.orgId, sql.placeholder('orgId'));
  const firstPage = prepareNamed(transactions, `${options.statementPrefix}_first_page`, (db) =>
    select(db, table, options.columns).where(and(inOrg, options.where)).orderBy(desc(table.id)).limit(sql.placeholder('fetch')),
  );
  const nextPage = prepareNamed(transactions, `${options.statementPrefix}_next_page`, (db) =>
    select(db, table, options.columns)
      .where(and(inOrg, options.where, lt(table.id, sql.placeholder('afterId'))))
      .orderBy(desc(table.id))
      .limit(sql.placeholder('fetch')),
  );
  return {
    async listPage(orgId, page) {
      const rows =
        page.afterId === null
          ? await firstPage.execute({ orgId, fetch: page.fetch })
          : await nextPage.execute({ orgId, afterId: page.afterId, fetch: page.fetch });
      return rows as RowOf<TColumns>[];
    },
  };
}

/** Both reads over the same columns: `findById(orgId, id)` and `listPage(orgId, page)`. */
export function orgScopedReads<T extends OrgScopedTable, TColumns extends Columns = T['_']['columns']>(
  transactions: TransactionSource,
  table: T,
  options: OrgScopedReadOptions<TColumns>,
): OrgScopedReads<RowOf<TColumns>> {
  return { ...orgScopedById(transactions, table, options), ...orgScopedPages(transactions, table, options) };
}
