import { PGlite, types } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { date, integer, interval, jsonb, numeric, pgTable, text, timestamp, boolean, bigint } from 'drizzle-orm/pg-core';
import { DatabaseConnection } from './connection';
import { drizzlePgliteClient } from './pglite-client';

const sample = pgTable('sample', {
  id: integer('id').primaryKey(),
  at: timestamp('at', { withTimezone: true, mode: 'date' }),
  atText: timestamp('at_text', { withTimezone: true, mode: 'string' }),
  local: timestamp('local', { mode: 'date' }),
  day: date('day', { mode: 'string' }),
  dayDate: date('day_date', { mode: 'date' }),
  span: interval('span'),
  amount: numeric('amount'),
  big: bigint('big', { mode: 'number' }),
  flag: boolean('flag'),
  tags: text('tags').array(),
  stamps: timestamp('stamps', { withTimezone: true, mode: 'string' }).array(),
  amounts: numeric('amounts').array(),
  doc: jsonb('doc'),
});

const CREATE = `create table sample (
  id int primary key, at timestamptz, at_text timestamptz, local timestamp, day date, day_date date, span interval,
  amount numeric, big bigint, flag boolean, tags text[], stamps timestamptz[], amounts numeric[], doc jsonb)`;
const INSERT = `insert into sample values
  (1, '2026-03-04 05:06:07.891+00', '2026-03-04 05:06:07.891+02', '2026-03-04 05:06:07', '2026-03-04', '2026-03-05', '1 day 02:03:04',
   '12345.678', 9007199254740991, true, '{a,"b c"}', '{"2026-01-01 00:00:00+00","2026-02-01 12:00:00+00"}', '{1.5,2.25}', '{"k":[1,{"x":null}]}'),
  (2, null, null, null, null, null, null, null, null, null, null, null, null, null)`;

async function open(adapted: boolean) {
  const client = await PGlite.create();
  await client.exec(CREATE);
  await client.exec(INSERT);
  return { client, db: drizzle({ client: adapted ? drizzlePgliteClient(client) : client }) };
}

describe('drizzlePgliteClient: the same rows without the per-query parser copy', () => {
  let plain: Awaited<ReturnType<typeof open>>;
  let adapted: Awaited<ReturnType<typeof open>>;

  // two fresh PGlite instances: seconds each on a loaded machine, so a bound of its own
  beforeAll(async () => {
    plain = await open(false);
    adapted = await open(true);
  }, 120_000);
  afterAll(async () => {
    await plain.client.close();
    await adapted.client.close();
  });

  test('select, prepared select, raw execute and a transaction return equal rows', async () => {
    const read = async (db: typeof plain.db) => ({
      select: await db.select().from(sample).orderBy(sample.id),
      prepared: await db.select().from(sample).where(sql`${sample.id} = ${sql.placeholder('id')}`).prepare('by_id').execute({ id: 1 }),
      raw: (await db.execute(sql`select * from sample order by id`)).rows,
      tx: await db.transaction(async (tx) => tx.select().from(sample).orderBy(sample.id)),
      nested: await db.transaction((tx) => tx.transaction(async (inner) => inner.select({ stamps: sample.stamps }).from(sample))),
    });
    const expected = await read(plain.db);
    const actual = await read(adapted.db);
    expect(actual).toEqual(expected);
    // what drizzle itself makes of the text types, as a check that the comparison covers them
    expect(expected.select[0].at).toEqual(new Date('2026-03-04T05:06:07.891Z'));
    expect(typeof expected.select[0].day).toBe('string');
    expect(expected.select[0].stamps).toHaveLength(2);
  });

  test("drizzle's queries reach PGlite without parsers; other parsers still pass", async () => {
    const query = jest.spyOn(adapted.client, 'query');
    await adapted.db.select().from(sample);
    expect(query).toHaveBeenCalled();
    for (const call of query.mock.calls) expect(call[2]?.parsers).toBeUndefined();
    query.mockRestore();

    const client = drizzlePgliteClient(adapted.client);
    const upper = { parsers: { [types.TEXT]: (value: string) => value.toUpperCase() } };
    const res = await client.query<{ tag: string }>(`select 'abc'::text as tag`, [], upper);
    expect(res.rows[0].tag).toBe('ABC');
    // a text type parsed into something else is not drizzle's option either
    const dated = { parsers: { [types.DATE]: (value: string) => `day ${value}` } };
    expect((await client.query<{ d: string }>(`select date '2026-01-02' as d`, [], dated)).rows[0].d).toBe('day 2026-01-02');
  });
});

describe('one connection: a statement inside a transaction goes to the transaction, or fails at once', () => {
  let client: PGlite;
  let connection: DatabaseConnection;

  beforeAll(async () => {
    client = await PGlite.create();
    connection = DatabaseConnection.fromPglite(client);
  }, 120_000);
  afterAll(() => connection.close());

  const one = sql`select 1 as one`;

  test('a statement on the root database inside a transaction is refused, not left waiting for the transaction; the transaction rolls back', async () => {
    await client.exec('create table if not exists marks (name text primary key)');
    const attempt = connection.transaction(async (tx) => {
      await tx.execute(sql`insert into marks values ('refused')`);
      await connection.db.execute(one);
    });
    // drizzle names the query and keeps the refusal as its cause
    await expect(attempt).rejects.toMatchObject({ cause: { message: expect.stringMatching(/would wait for it forever/) } });
    expect((await client.query(`select count(*)::int as n from marks where name = 'refused'`)).rows).toEqual([{ n: 0 }]);
  });

  test('a second transaction begun inside one is refused too (a savepoint is the transaction\'s own tx.transaction)', async () => {
    const attempt = connection.transaction(async () => connection.transaction(async (tx) => tx.execute(one)));
    await expect(attempt).rejects.toThrow(/a second transaction inside an open transaction/);
    const savepoint = await connection.transaction((tx) => tx.transaction(async (inner) => (await inner.execute(one)).rows));
    expect(savepoint).toEqual([{ one: 1 }]);
  });

  test('work of another context waits for the transaction and then runs; so does work the callback left running', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let began!: () => void;
    const begun = new Promise<void>((resolve) => (began = resolve));
    let leftRunning: Promise<unknown> | undefined;
    const holder = connection.transaction(async (tx) => {
      await tx.execute(one);
      began();
      await gate;
      // not awaited: it runs once the callback is over, outside the transaction
      leftRunning = new Promise((resolve) => setTimeout(resolve, 0)).then(() => connection.db.execute(one));
    });
    await begun;
    const other = connection.db.execute(one);
    release();
    await holder;
    expect((await other).rows).toEqual([{ one: 1 }]);
    expect(((await leftRunning) as { rows: unknown[] }).rows).toEqual([{ one: 1 }]);
  });
});
