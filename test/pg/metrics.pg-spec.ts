import { sql } from 'drizzle-orm';
import { sampleValue, scrapeMetrics, type Exposition } from '../support/prometheus';
import { createTestApp, type TestApp } from '../support/test-app';

/** The connection pool gauges of a PostgreSQL server (the embedded engine has no pool). */
describe('db_pool_* gauges (server engine)', () => {
  const POOL_MAX = 3;
  let t: TestApp;

  beforeAll(async () => {
    if (!process.env.DATABASE_URL) throw new Error('run through npm run test:pg (DATABASE_URL)');
    t = await createTestApp({ metricsPort: 0, host: '127.0.0.1', dbPoolMax: POOL_MAX });
  });
  afterAll(() => t?.close());

  const scrape = () => scrapeMetrics(t.app);

  const pool = (e: Exposition) => ({
    inUse: sampleValue(e, 'db_pool_connections_in_use'),
    idle: sampleValue(e, 'db_pool_connections_idle'),
    waiting: sampleValue(e, 'db_pool_requests_waiting'),
    max: sampleValue(e, 'db_pool_connections_max'),
  });

  test('in use, idle and waiting follow the pool as transactions hold and release its connections', async () => {
    const { types } = await scrape();
    for (const name of ['db_pool_connections_in_use', 'db_pool_connections_idle', 'db_pool_requests_waiting', 'db_pool_connections_max']) {
      expect([name, types.get(name)]).toEqual([name, 'gauge']);
    }

    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const started: Array<Promise<void>> = [];
    const holders: Array<Promise<void>> = [];
    // each transaction keeps its connection until the gate opens; the last one has to wait for a connection
    for (let i = 0; i < POOL_MAX + 1; i++) {
      let began!: () => void;
      started.push(new Promise<void>((resolve) => (began = resolve)));
      holders.push(
        t.connection.transaction(async (tx) => {
          await tx.execute(sql`select 1`);
          began();
          await gate;
        }),
      );
    }
    await Promise.all(started.slice(0, POOL_MAX));
    expect(pool(await scrape())).toEqual({ inUse: POOL_MAX, idle: 0, waiting: 1, max: POOL_MAX });

    release();
    await Promise.all(holders);
    expect(pool(await scrape())).toEqual({ inUse: 0, idle: POOL_MAX, waiting: 0, max: POOL_MAX });
  });
});
