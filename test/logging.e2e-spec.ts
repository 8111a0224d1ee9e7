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

  test('every log line is one JSON object; failures (401, 404, unparsable JSON, 422) get their request line too', async () => {
    const org = await createOrg(t.app);
    const from = t.logs.length;
    const calls = [
      { id: 'log-ok', status: 200, send: () => t.http.get('/api/v1/team').set('Authorization', org.auth) },
      { id: 'log-401', status: 401, send: () => t.http.get('/api/v1/org') },
      { id: 'log-404', status: 404, send: () => t.http.get('/api/v1/nowhere').set('Authorization', org.auth) },
      { id: 'log-bad-json', status: 422, send: () => t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').send('{bad') },
      { id: 'log-422', status: 422, send: () => t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 42 }) },
    ];
    for (const call of calls) expect((await call.send().set('X-Request-ID', call.id)).status).toBe(call.status);
    const lines = t.logs.slice(from);
    expect(lines.length).toBeGreaterThanOrEqual(calls.length);
    const entries = lines.map((text) => {
      expect(text.endsWith('\n')).toBe(true);
      expect(text.trim().split('\n')).toHaveLength(1);
      return JSON.parse(text) as Record<string, unknown>;
    });
    for (const entry of entries) expect(entry).toMatchObject({ level: expect.any(String), time: expect.any(String), msg: expect.any(String) });
    for (const call of calls) {
      const line = entries.find((entry) => entry.request_id === call.id && entry.msg === 'request');
      expect({ call: call.id, line }).toMatchObject({ call: call.id, line: { status: call.status, path: expect.stringMatching(/^\/api\/v1\//), duration_ms: expect.any(Number) } });
    }
  });
});

describe('every line written while serving a request carries its request_id and trace_id', () => {
  test('a line a service writes (AgentsService: "agent moved to trash") names the request and its trace', async () => {
    const org = await createOrg(t.app);
    const created = await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'loggedBot', name: 'Logged', instructions: 'Be kind.' });
    expect(created.status).toBe(201);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await t.http
      .delete(`/api/v1/agents/${created.body.data.id}`)
      .set('Authorization', org.auth)
      .set('X-Request-ID', 'log-service-line')
      .set('traceparent', `00-${traceId}-00f067aa0ba902b7-01`);
    expect(res.status).toBe(200);
    const entries = t.logs.map((text) => JSON.parse(text) as Record<string, unknown>);
    const line = entries.find((entry) => entry.msg === 'agent moved to trash' && entry.agent_id === created.body.data.id);
    expect(line).toMatchObject({ request_id: 'log-service-line', trace_id: traceId, org_id: org.orgId });
  });
});

describe('never a key or a secret in the logs', () => {
  test('tokens and Authorization values of good, bad and revoked keys do not appear', async () => {
    const org = await createOrg(t.app);
    const revoked = await org.key(['org:read'], { revoked: true });
    const attempts = [org.auth, revoked.auth, `Bearer svc_live_${'Z'.repeat(40)}`, 'Basic dXNlcjpwYXNz'];
    const from = t.logs.length;
    for (const authorization of attempts) {
      await t.http.get('/api/v1/org').set('Authorization', authorization);
      await t.http.get('/api/v1/nowhere').set('Authorization', authorization);
      await t.http.post('/api/v1/org').set('Authorization', authorization).set('Content-Type', 'application/json').send('{bad');
    }
    // the lines these requests wrote exist (one request line each), so their absence of secrets means something
    const written = t.logs.slice(from);
    expect(written.filter((text) => (JSON.parse(text) as { msg?: string }).msg === 'request')).toHaveLength(attempts.length * 3);
    const all = t.logs.join('\n');
    for (const authorization of attempts) {
      expect(all).not.toContain(authorization);
      expect(all).not.toContain(authorization.split(' ')[1]);
    }
    expect(all).not.toContain(org.token.slice('svc_live_'.length, 'svc_live_'.length + 16));
    expect(all).not.toMatch(/svc_live_[A-Za-z0-9_-]{8,}/);
  });
});
