import { drizzle } from 'drizzle-orm/node-postgres';
import type { Database } from './database.types';
import { UNNAMED_STATEMENT_NAME, type TransactionSource } from './prepared-statements';
import { ShapeStatements, type ShapeQuery } from './shape-statements';

// a drizzle database without a connection: the statements here are never run on it
const database = () => drizzle.mock() as unknown as Database;
const outsideTransactions = (db: Database): TransactionSource => ({ tx: db, isTransactionActive: () => false });

/** What each build call made: the database it was built on and the name it was prepared under, if any. */
interface Built {
  shape: string;
  db: Database;
  preparedAs?: string;
}

/** A query per shape that records how it was built and prepared, and answers its shape when run. */
function recorder() {
  const built: Built[] = [];
  const build = (shape: string) => (db: Database): ShapeQuery<string> => {
    const record: Built = { shape, db };
    built.push(record);
    return {
      toSQL: () => ({ sql: `select '${shape}'`, params: [] }),
      prepare: (name) => {
        record.preparedAs = name;
        return { execute: async () => [`prepared ${shape}`] };
      },
      execute: async () => [`built ${shape}`],
    };
  };
  return { built, build };
}

describe('statements by shape', () => {
  test('a shape is built once and its statement reused', async () => {
    const { built, build } = recorder();
    const statements = new ShapeStatements<string>(outsideTransactions(database()), { namePrefix: 'reuse', maxNamed: 4, maxShapes: 8 });
    const first = statements.statement('a', true, build('a'));
    expect(statements.statement('a', true, build('a'))).toBe(first);
    expect(built.map((b) => b.shape)).toEqual(['a']);
    expect(await first.execute({})).toEqual(['prepared a']);
  });

  test('a plan-stable shape is named after the prefix and its shape; any other shape is unnamed', () => {
    const { built, build } = recorder();
    const statements = new ShapeStatements<string>(outsideTransactions(database()), { namePrefix: 'naming', maxNamed: 4, maxShapes: 8 });
    statements.statement('stable', true, build('stable'));
    statements.statement('values', false, build('values'));
    const [stable, values] = built;
    expect(stable.preparedAs).toMatch(/^naming_[0-9a-f]{16}$/);
    expect(values.preparedAs).toBe(UNNAMED_STATEMENT_NAME);
    expect(statements.namedShapes()).toEqual(['stable']);
  });

  test('two shapes never share a name', () => {
    const { built, build } = recorder();
    const statements = new ShapeStatements<string>(outsideTransactions(database()), { namePrefix: 'distinct', maxNamed: 4, maxShapes: 8 });
    statements.statement('agentId', true, build('agentId'));
    statements.statement('agentId,afterId', true, build('agentId,afterId'));
    expect(new Set(built.map((b) => b.preparedAs)).size).toBe(2);
  });

  test('past maxNamed, plan-stable shapes are kept unnamed', () => {
    const { built, build } = recorder();
    const statements = new ShapeStatements<string>(outsideTransactions(database()), { namePrefix: 'named_bound', maxNamed: 2, maxShapes: 8 });
    for (const shape of ['s1', 's2', 's3']) statements.statement(shape, true, build(shape));
    expect(built.map((b) => b.preparedAs === UNNAMED_STATEMENT_NAME)).toEqual([false, false, true]);
    expect(statements.namedShapes()).toEqual(['s1', 's2']);
    // the third is kept all the same: asked again, it is not built again
    statements.statement('s3', true, build('s3'));
    expect(built).toHaveLength(3);
  });

  test('past maxShapes, a shape is built per call on the transaction source and never prepared', async () => {
    const { built, build } = recorder();
    const db = database();
    const statements = new ShapeStatements<string>(outsideTransactions(db), { namePrefix: 'all_bound', maxNamed: 4, maxShapes: 2 });
    statements.statement('k1', true, build('k1'));
    statements.statement('k2', false, build('k2'));
    const late = statements.statement('k3', true, build('k3'));
    statements.statement('k3', true, build('k3'));
    expect(built.map((b) => b.shape)).toEqual(['k1', 'k2', 'k3', 'k3']);
    expect(built.slice(2).map((b) => [b.preparedAs, b.db === db])).toEqual([
      [undefined, true],
      [undefined, true],
    ]);
    expect(await late.execute({})).toEqual(['built k3']);
    expect(statements.namedShapes()).toEqual(['k1']);
  });
});
