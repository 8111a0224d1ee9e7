import { sql } from 'drizzle-orm';
import { createOrg } from '../support/factories';
import { createTestApp, type TestApp } from '../support/test-app';

// test:pg must really run on the server: a silent fall-back to the embedded
// engine would make the whole run prove nothing.
describe('npm run test:pg runs on a PostgreSQL server', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('is configured with DATABASE_URL and opened the server engine', async () => {
    expect(process.env.DATABASE_URL).toMatch(/^postgres(ql)?:\/\//);
    expect(t.connection.kind).toBe('postgres');
    const result = await t.connection.db.execute(sql`select version() as version`);
    expect(JSON.stringify(result)).toContain('PostgreSQL');
  });

  it('serves an organization stored on the server', async () => {
    const org = await createOrg(t.app);
    const res = await t.http.get('/api/v1/org').set('Authorization', org.auth).expect(200);
    expect(res.body.data.id).toBe(org.orgId);
  });
});
