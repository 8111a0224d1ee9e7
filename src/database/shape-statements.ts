import { createHash } from 'node:crypto';
import type { Database } from './database.types';
import { prepareNamed, prepareUnnamed, type TransactionSource } from './prepared-statements';

/** A statement as a caller runs it: its placeholders' values in, its rows out. */
export interface ShapeStatement<Row> {
  execute(values: Record<string, unknown>): Promise<Row[]>;
}

/** A query as drizzle built it, for one shape: run as built, or prepared. */
export interface ShapeQuery<Row> extends ShapeStatement<Row> {
  toSQL(): { sql: string; params: unknown[] };
  prepare(name: string): ShapeStatement<Row>;
}

export interface ShapeStatementBounds {
  /** the prefix of the named statements' names, unique across the database (`prepareNamed`) */
  namePrefix: string;
  /** named statements kept: each is a statement on every pooled connection that ran it */
  maxNamed: number;
  /** statements kept in all (an unnamed one holds only its SQL text); past that, shapes are built per call */
  maxShapes: number;
}

/**
 * Statements by query shape (which filters a request has, not their values),
 * each built once. A plan-stable shape (a generic plan serves every value)
 * is named, so PostgreSQL may plan it once; any other shape is unnamed and
 * planned with each execution's values, so no plan depends on how many times
 * a statement ran. Both bounds keep a client cycling through shapes from
 * growing the process or every connection without end.
 */
export class ShapeStatements<Row> {
  private readonly statements = new Map<string, ShapeStatement<Row>>();
  private readonly named = new Set<string>();

  constructor(
    private readonly transactions: TransactionSource,
    private readonly bounds: ShapeStatementBounds,
  ) {}

  /** The statement of `shape`, built by `build` the first time it is asked for. */
  statement(shape: string, planStable: boolean, build: (db: Database) => ShapeQuery<Row>): ShapeStatement<Row> {
    const kept = this.statements.get(shape);
    if (kept) return kept;
    if (this.statements.size >= this.bounds.maxShapes) return build(this.transactions.tx);
    const named = planStable && this.named.size < this.bounds.maxNamed;
    const statement = named
      ? prepareNamed(this.transactions, `${this.bounds.namePrefix}_${createHash('sha256').update(shape).digest('hex').slice(0, 16)}`, build)
      : prepareUnnamed(this.transactions, build);
    if (named) this.named.add(shape);
    this.statements.set(shape, statement);
    return statement;
  }

  /** The shapes whose statements are named (for tests and diagnostics). */
  namedShapes(): string[] {
    return [...this.named];
  }
}
