import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { undocumentedStatuses } from './support/global-teardown';
import { STATUS_RECORD_DIR_ENV } from './support/status-recorder';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Every status the service answers for an operation anywhere in the
 * e2e suite is documented on that operation. The check itself runs once per
 * Jest run, in test/support/global-teardown.ts, over what every test app's
 * HTTP helper recorded; these tests show the recorder records and the check
 * can fail.
 */
describe('status coverage of the e2e suite', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('the shared HTTP helper records method, path and status of every response, per worker', async () => {
    await t.http.get('/api/v1/org?x=1').expect(401);
    const dir = process.env[STATUS_RECORD_DIR_ENV]!;
    const lines = readFileSync(join(dir, `statuses-${process.pid}.jsonl`), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(lines).toContainEqual({ method: 'GET', path: '/api/v1/org', status: 401, file: 'test/status-coverage.e2e-spec.ts' });
  });

  it('the check names an operation whose answered status is not documented, and ignores what is no operation', async () => {
    const document = (await t.http.get('/api/v1/openapi.json').expect(200)).body;
    const file = 'test/x.e2e-spec.ts';
    const problems = undocumentedStatuses(
      [
        { method: 'GET', path: '/api/v1/agents/agent_0123456789abcdef01234567', status: 404, file },
        { method: 'GET', path: '/api/v1/agents/agent_0123456789abcdef01234567', status: 418, file },
        { method: 'GET', path: '/api/v1/agents', status: 200, file },
        { method: 'GET', path: '/api/v1/no-such-route', status: 404, file },
        { method: 'GET', path: '/docs', status: 200, file },
      ],
      document,
    );
    expect(problems).toEqual(['GET /agents/{id} → 418 (answered in test/x.e2e-spec.ts)']);
  });
});
