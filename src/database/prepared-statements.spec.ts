import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import type { Database } from './database.types';
import { orgScopedReads } from './org-scoped-reads';
import { prepareNamed } from './prepared-statements';
import * as schema from './schema';

// a drizzle database without a connection: building and preparing a statement never reaches one
const database = () => drizzle.mock({ schema }) as unknown as Database;
const orgById = (db: Database) => db.select().from(schema.orgs).where(eq(schema.orgs.id, sql.placeholder('orgId')));
const memberById = (db: Database) => db.select().from(schema.members).where(eq(schema.members.id, sql.placeholder('id')));

describe('prepared statement names are unique per database', () => {
  test('a second statement under a name already taken fails when it is built, naming the name', () => {
    const db = database();
    prepareNamed(db, 'by_id', orgById(db));
    expect(() => prepareNamed(db, 'by_id', memberById(db))).toThrow(/"by_id" is already used for another statement/);
  });

  test('the same statement prepared again under its name (a second instance of a repository) is allowed', () => {
    const db = database();
    prepareNamed(db, 'orgs_by_id', orgById(db));
    expect(() => prepareNamed(db, 'orgs_by_id', orgById(db))).not.toThrow();
  });

  test('names are per database: another database may use the name for other SQL', () => {
    const first = database();
    const second = database();
    prepareNamed(first, 'by_id', orgById(first));
    expect(() => prepareNamed(second, 'by_id', memberById(second))).not.toThrow();
  });

  test('orgScopedReads: two reads of one table under one statementPrefix but other conditions fail', () => {
    const db = database();
    orgScopedReads(db, schema.agents, { statementPrefix: 'agents' });
    expect(() => orgScopedReads(db, schema.agents, { statementPrefix: 'agents', where: sql`${schema.agents.deletedAt} is null` })).toThrow(
      /"agents_by_id"/,
    );
    expect(() => orgScopedReads(db, schema.agents, { statementPrefix: 'agents_live', where: sql`${schema.agents.deletedAt} is null` })).not.toThrow();
  });
});
