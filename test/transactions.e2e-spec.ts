import { Propagation, TransactionHost } from '@nestjs-cls/transactional';
import { sql } from 'drizzle-orm';
import type { DatabaseTransactions } from '../src/database/transactions';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * A statement runs in a transaction because it is written on `txHost.tx`
 * inside `txHost.withTransaction(...)` (docs/decisions.md, "Transactions you
 * can see"), on either engine (npm test: PGlite; npm run test:pg: PostgreSQL).
 */
let t: TestApp;
let txHost: TransactionHost<DatabaseTransactions>;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp();
  txHost = t.app.get(TransactionHost);
  org = await createOrg(t.app);
});
afterAll(() => t.close());

class Undo extends Error {}

async function orgName(): Promise<string> {
  const { rows } = (await t.connection.db.execute(sql`select name from orgs where id = ${org.orgId}`)) as unknown as { rows: Array<{ name: string }> };
  return rows[0].name;
}

/** The name as the open transaction sees it. */
async function readName(): Promise<string> {
  const { rows } = (await txHost.tx.execute(sql`select name from orgs where id = ${org.orgId}`)) as unknown as { rows: Array<{ name: string }> };
  return rows[0].name;
}

const rename = (name: string) => txHost.tx.execute(sql`update orgs set name = ${name} where id = ${org.orgId}`);

describe('a statement on txHost.tx runs in the transaction the callback is in', () => {
  it('inside withTransaction it rolls back with the callback; outside it commits on its own', async () => {
    await rename('before');
    await expect(
      txHost.withTransaction(async () => {
        await rename('inside');
        throw new Undo();
      }),
    ).rejects.toBeInstanceOf(Undo);
    expect(await orgName()).toBe('before');
  });

  it('a nested withTransaction joins the open one: its failure undoes the outer work too', async () => {
    await rename('kept');
    await expect(
      txHost.withTransaction(async () => {
        await rename('outer');
        await txHost.withTransaction(async () => {
          await rename('inner');
          throw new Undo();
        });
      }),
    ).rejects.toBeInstanceOf(Undo);
    expect(await orgName()).toBe('kept');
  });

  it('Propagation.Nested is a savepoint: its failure rolls back its own work alone, and the outer work commits', async () => {
    await txHost.withTransaction(async () => {
      await rename('outer');
      await expect(
        txHost.withTransaction(Propagation.Nested, async () => {
          await rename('inner');
          throw new Undo();
        }),
      ).rejects.toBeInstanceOf(Undo);
      // the transaction goes on after the savepoint's rollback (on PostgreSQL it would be aborted otherwise)
      await rename(`${await readName()}+after`);
    });
    expect(await orgName()).toBe('outer+after');
  });
});

describe('the embedded database (one connection): a root statement inside a transaction fails at once', () => {
  it('the root database inside withTransaction is refused with the cause named, and the work rolls back', async () => {
    if (t.connection.kind !== 'pglite') return; // PostgreSQL runs it on a connection of its own, outside the transaction
    await rename('untouched');
    const attempt = txHost.withTransaction(async () => {
      await rename('refused');
      await t.connection.db.execute(sql`select 1`);
    });
    await expect(attempt).rejects.toMatchObject({ cause: { message: expect.stringMatching(/would wait for it forever .*txHost\.tx/) } });
    expect(await orgName()).toBe('untouched');
  });
});
