import { createOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('structured JSON logs: one line per request with request_id, method, path, status, duration', () => {
  test('a request line carries the fields; the query string is not logged', async () => {
    const org = await createOrg(t.app);
    await t.http.get('/api/v1/org?secret=abc').set('Authorization', org.auth).set('X-Request-ID', 'log-line-1');
    const line = t.logs.map((text) => JSON.parse(text)).find((entry) => entry.request_id === 'log-line-1' && entry.msg === 'request');
    expect(line).toMatchObject({ level: 'info', method: 'GET', path: '/api/v1/org', status: 200, org_id: org.orgId, key_id: org.keyId });
    expect(typeof line.duration_ms).toBe('number');
    expect(typeof line.time).toBe('string');
    expect(JSON.stringify(line)).not.toContain('secret=abc');
  });

  test('every log line is one JSON object', () => {
    for (const text of t.logs) expect(() => JSON.parse(text)).not.toThrow();
  });
});

describe('never a key or a secret in the logs', () => {
  test('tokens and Authorization values of good, bad and revoked keys do not appear', async () => {
    const org = await createOrg(t.app);
    const revoked = await org.key(['org:read'], { revoked: true });
    const attempts = [org.auth, revoked.auth, `Bearer svc_live_${'Z'.repeat(40)}`, 'Basic dXNlcjpwYXNz'];
    for (const authorization of attempts) {
      await t.http.get('/api/v1/org').set('Authorization', authorization);
      await t.http.get('/api/v1/nowhere').set('Authorization', authorization);
      await t.http.post('/api/v1/org').set('Authorization', authorization).set('Content-Type', 'application/json').send('{bad');
    }
    const all = t.logs.join('\n');
    expect(t.logs.length).toBeGreaterThan(attempts.length * 3 - 1);
    for (const authorization of attempts) {
      expect(all).not.toContain(authorization);
      expect(all).not.toContain(authorization.split(' ')[1]);
    }
    expect(all).not.toContain(org.token.slice('svc_live_'.length, 'svc_live_'.length + 16));
    expect(all).not.toMatch(/svc_live_[A-Za-z0-9_-]{8,}/);
  });
});
