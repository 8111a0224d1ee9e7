import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import type { Database } from './database.types';
import { orgScopedReads } from './org-scoped-reads';
import { prepareNamed, type TransactionSource } from './prepared-statements';
import { agents } from '../agents/agents.table';
import { members } from '../team/team.table';
import { orgs } from './orgs.table';

// a drizzle database without a connection: building and preparing a statement never reaches one
const database = () => drizzle.mock() as unknown as Database;
/** What TransactionHost gives a repository when no transaction is open: the root database. */
const outsideTransactions = (db: Database): TransactionSource => ({ tx: db, isTransactionActive: () => false });
const orgById = (db: Database) => db.select().from(orgs).where(eq(orgs.id, sql.placeholder('orgId')));
const memberById = (db: Database) => db.select().from(members).where(eq(members.id, sql.placeholder('id')));

describe('prepared statement names are unique per database', () => {
  test('a second statement under a name already taken fails when it is built, naming the name', () => {
    const db = database();
    prepareNamed(outsideTransactions(db), 'by_id', orgById);
    expect(() => prepareNamed(outsideTransactions(db), 'by_id', memberById)).toThrow(/"by_id" is already used for another statement/);
  });

  test('the same statement prepared again under its name (a second instance of a repository) is allowed', () => {
    const db = database();
    prepareNamed(outsideTransactions(db), 'orgs_by_id', orgById);
    expect(() => prepareNamed(outsideTransactions(db), 'orgs_by_id', orgById)).not.toThrow();
  });

  test('names are per database: another database may use the name for other SQL', () => {
    const first = database();
    const second = database();
    prepareNamed(outsideTransactions(first), 'by_id', orgById);
    expect(() => prepareNamed(outsideTransactions(second), 'by_id', memberById)).not.toThrow();
  });

  test('orgScopedReads: two reads of one table under one statementPrefix but other conditions fail', () => {
    const db = database();
    orgScopedReads(outsideTransactions(db), agents, { statementPrefix: 'agents' });
    expect(() => orgScopedReads(outsideTransactions(db), agents, { statementPrefix: 'agents', where: sql`${agents.deletedAt} is null` })).toThrow(
      /"agents_by_id"/,
    );
    expect(() => orgScopedReads(outsideTransactions(db), agents, { statementPrefix: 'agents_live', where: sql`${agents.deletedAt} is null` })).not.toThrow();
  });
});

describe('a prepared statement runs in the open transaction', () => {
  test('outside a transaction the statement prepared on the root database runs; inside one it is built on the transaction', async () => {
    const root = database();
    const tx = database();
    let open = false;
    const transactions: TransactionSource = { get tx() { return open ? tx : root; }, isTransactionActive: () => open };
    const builtOn: Database[] = [];
    const statement = prepareNamed(transactions, 'orgs_by_id_tx', (db) => {
      builtOn.push(db);
      return orgById(db);
    });
    expect(builtOn).toEqual([root]);
    open = true;
    // the mock database has no connection: the execution fails, after the statement was built where it runs
    await statement.execute({ orgId: 'org_1' }).catch(() => undefined);
    expect(builtOn).toEqual([root, tx]);
  });

  test('preparing while a transaction is open is refused: the statement would belong to the transaction', () => {
    const db = database();
    expect(() => prepareNamed({ tx: db, isTransactionActive: () => true }, 'orgs_by_id', orgById)).toThrow(/outside a transaction/);
  });
});
