import { randomUUID } from 'node:crypto';
import { connect, type AddressInfo } from 'node:net';
import { createOrg, type TestOrg } from './support/factories';
import { expectPromtoolAccepts, parseExposition, sampleValue, scrapeMetrics, scrapeMetricsText, type Exposition } from './support/prometheus';
import { createTestApp, type TestApp } from './support/test-app';
import { until } from './support/until';

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp({ metricsPort: 0, host: '127.0.0.1', rateLimitPlans: { tiny: { perMinute: 2, perHour: 100 } } });
  org = await createOrg(t.app);
});
afterAll(() => t.close());

const scrapeText = () => scrapeMetricsText(t.app);
const scrape = () => scrapeMetrics(t.app);

/** How much each of these samples moved while `act` ran. */
async function moved(samples: Record<string, [string, Record<string, string>]>, act: () => Promise<void>): Promise<Record<string, number>> {
  const before = await scrape();
  await act();
  const after = await scrape();
  return Object.fromEntries(Object.entries(samples).map(([key, [name, labels]]) => [key, sampleValue(after, name, labels) - sampleValue(before, name, labels)]));
}

const requests = (method: string, route: string, status: number): [string, Record<string, string>] => ['http_requests_total', { method, route, status: String(status) }];
const durations = (method: string, route: string, status: number): [string, Record<string, string>] => [
  'http_request_duration_seconds_count',
  { method, route, status: String(status) },
];
const authFailures = (reason: string): [string, Record<string, string>] => ['auth_failures_total', { reason }];

async function createAgent(headers: Record<string, string> = {}, body: Record<string, unknown> = {}) {
  const req = t.http.post('/api/v1/agents').set('Authorization', org.auth);
  for (const [name, value] of Object.entries(headers)) req.set(name, value);
  return req.send({ handle: `h${randomUUID().replace(/-/g, '').slice(0, 12)}`, name: 'Metrics bot', instructions: 'Count.', ...body });
}

describe('http_requests_total and http_request_duration_seconds: by method, route template and status', () => {
  test('2xx and a 404 of a matched route are counted under the route template, never the raw path', async () => {
    let agentId = '';
    const delta = await moved(
      {
        created: requests('POST', '/api/v1/agents', 201),
        read: requests('GET', '/api/v1/agents/:id', 200),
        readTimed: durations('GET', '/api/v1/agents/:id', 200),
        missing: requests('GET', '/api/v1/agents/:id', 404),
      },
      async () => {
        const created = await createAgent();
        expect(created.status).toBe(201);
        agentId = created.body.data.id;
        expect((await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth)).status).toBe(200);
        expect((await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth)).status).toBe(200);
        expect((await t.http.get('/api/v1/agents/agent_000000000000000000000000').set('Authorization', org.auth)).status).toBe(404);
      },
    );
    expect(delta).toEqual({ created: 1, read: 2, readTimed: 2, missing: 1 });
    const text = await scrapeText();
    expect(text).not.toContain(agentId);
    expect(text).not.toContain('agent_000000000000000000000000');
  });

  test('401 answers count, and each authentication failure is counted by its reason', async () => {
    const revoked = await org.key(['org:read'], { revoked: true });
    const expired = await org.key(['org:read'], { expiresAt: new Date(Date.now() - 60_000) });
    const attempts: Array<[string, string | null]> = [
      ['missing', null],
      ['malformed', 'Basic dXNlcjpwYXNz'],
      ['malformed', 'Bearer not-a-key'],
      ['unknown', `Bearer svc_live_${'Z'.repeat(40)}`],
      ['revoked', revoked.auth],
      ['expired', expired.auth],
    ];
    const delta = await moved(
      {
        unauthorized: requests('GET', '/api/v1/org', 401),
        missing: authFailures('missing'),
        malformed: authFailures('malformed'),
        unknown: authFailures('unknown'),
        revoked: authFailures('revoked'),
        expired: authFailures('expired'),
      },
      async () => {
        for (const [, authorization] of attempts) {
          const req = t.http.get('/api/v1/org');
          if (authorization !== null) req.set('Authorization', authorization);
          expect((await req).status).toBe(401);
        }
      },
    );
    expect(delta).toEqual({ unauthorized: 6, missing: 1, malformed: 2, unknown: 1, revoked: 1, expired: 1 });
  });

  test('403 (a valid key without the scope) is counted as a response, not as an authentication failure', async () => {
    const reader = await org.key(['agents:read']);
    const delta = await moved(
      {
        forbidden: requests('GET', '/api/v1/org', 403),
        ...Object.fromEntries(['missing', 'malformed', 'unknown', 'revoked', 'expired'].map((reason) => [reason, authFailures(reason)])),
      },
      async () => {
        expect((await t.http.get('/api/v1/org').set('Authorization', reader.auth)).status).toBe(403);
      },
    );
    expect(delta).toEqual({ forbidden: 1, missing: 0, malformed: 0, unknown: 0, revoked: 0, expired: 0 });
  });

  test('unknown routes, inside the API prefix or outside it, share one label: unmatched', async () => {
    const delta = await moved(
      {
        get: requests('GET', 'unmatched', 404),
        remove: requests('DELETE', 'unmatched', 404),
      },
      async () => {
        expect((await t.http.get('/api/v1/no-such-thing/agent_0123456789abcdef01234567').set('Authorization', org.auth)).status).toBe(404);
        expect((await t.http.get('/not-under-the-prefix/abc')).status).toBe(404);
        expect((await t.http.delete('/api/v1/org').set('Authorization', org.auth)).status).toBe(404);
        // refused by the router itself: not valid percent-encoding
        expect((await t.http.get('/api/v1/agents/%zz').set('Authorization', org.auth)).status).toBe(404);
      },
    );
    expect(delta).toEqual({ get: 3, remove: 1 });
    const text = await scrapeText();
    expect(text).not.toContain('no-such-thing');
    expect(text).not.toContain('not-under-the-prefix');
  });

  test('422 from validation and from the body parser, and 413, are counted under their route', async () => {
    const delta = await moved(
      {
        invalid: requests('POST', '/api/v1/agents', 422),
        tooLarge: requests('POST', '/api/v1/agents', 413),
      },
      async () => {
        expect((await t.http.post('/api/v1/agents').set('Authorization', org.auth).send({})).status).toBe(422);
        const malformed = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').send('{bad');
        expect(malformed.status).toBe(422);
        const huge = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
        const tooLarge = await t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').send(huge);
        expect(tooLarge.status).toBe(413);
      },
    );
    expect(delta).toEqual({ invalid: 2, tooLarge: 1 });
  });
});

describe('a request cut by the request timeout (408): counted once, like any answer', () => {
  let slow: TestApp;
  let port: number;
  let auth: string;
  beforeAll(async () => {
    // Node's shortest: checked every second, so a cut comes 1–2 s after the request began
    slow = await createTestApp({ metricsPort: 0, host: '127.0.0.1', httpRequestTimeoutMs: 1000, httpHeadersTimeoutMs: 1000 });
    // only a request with a valid key has its body read (and waited for)
    auth = (await createOrg(slow.app)).auth;
    await slow.app.listen(0, '127.0.0.1');
    port = (slow.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(() => slow.close());

  /** Every http_requests_total series that moved while `act` ran, as "METHOD route status". */
  async function httpCountsMoved(act: () => Promise<void>): Promise<Record<string, number>> {
    const counts = (exposition: Exposition) =>
      new Map(exposition.samples.filter((s) => s.name === 'http_requests_total').map((s) => [`${s.labels.method} ${s.labels.route} ${s.labels.status}`, s.value]));
    const before = counts(await scrapeMetrics(slow.app));
    const movedSince = async () => {
      const after = counts(await scrapeMetrics(slow.app));
      return Object.fromEntries([...after].filter(([key, value]) => value !== (before.get(key) ?? 0)).map(([key, value]) => [key, value - (before.get(key) ?? 0)]));
    };
    await act();
    // the cut is counted once the answer is finished, which may be after the client saw the close
    await until(async () => Object.keys(await movedSince()).length > 0);
    // a second count (its body reader failing after the cut) is a negative: only letting time pass can show it did not come
    await new Promise((resolve) => setTimeout(resolve, 300));
    return movedSince();
  }

  /** Writes `head` on a new connection, sends nothing more, and resolves with what the server sent before closing it. */
  function stall(head: string): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(text));
      socket.write(head);
    });
  }

  test('a body that stalls: its method, route template and 408, and its one log line has the request line\'s fields', async () => {
    let answer = '';
    const moved = await httpCountsMoved(async () => {
      answer = await stall(`POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nX-Request-ID: cut-body\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"handle":`);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(moved).toEqual({ 'POST /api/v1/agents 408': 1 });
    const durations = sampleValue(await scrapeMetrics(slow.app), 'http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/agents', status: '408' });
    expect(durations).toBe(1);
    const lines = slow.logs
      .map((text) => JSON.parse(text))
      .filter((entry) => entry.request_id === 'cut-body' && (entry.msg === 'request' || entry.msg === 'request timeout: connection closed'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'request timeout: connection closed', method: 'POST', path: '/api/v1/agents', status: 408 });
    expect(lines[0].trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(lines[0].duration_ms).toBeGreaterThanOrEqual(900);
  });

  test('headers that never end: no method or route is known yet, so other and unmatched', async () => {
    let answer = '';
    const moved = await httpCountsMoved(async () => {
      answer = await stall('GET /api/v1/org HTTP/1.1\r\nHost: x\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(moved).toEqual({ 'other unmatched 408': 1 });
  });
});

describe('rate_limit_decisions_total', () => {
  test('allowed and limited decisions; the 429 is counted as a response', async () => {
    const tiny = await createOrg(t.app, { plan: 'tiny' });
    const delta = await moved(
      {
        allowed: ['rate_limit_decisions_total', { decision: 'allowed' }],
        limited: ['rate_limit_decisions_total', { decision: 'limited' }],
        ok: requests('GET', '/api/v1/org', 200),
        tooMany: requests('GET', '/api/v1/org', 429),
      },
      async () => {
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) statuses.push((await t.http.get('/api/v1/org').set('Authorization', tiny.auth)).status);
        expect(statuses).toEqual([200, 200, 429]);
      },
    );
    expect(delta).toEqual({ allowed: 2, limited: 1, ok: 2, tooMany: 1 });
    // no Redis configured: never in fallback
    expect(sampleValue(await scrape(), 'rate_limit_redis_fallback_active')).toBe(0);
  });
});

describe('idempotency_requests_total: executed, replayed, conflict', () => {
  test('a first request runs, a retry replays, a different body under the same key conflicts; no key, no count', async () => {
    const key = `metrics-${randomUUID()}`;
    const body = { handle: `h${randomUUID().replace(/-/g, '').slice(0, 12)}` };
    const delta = await moved(
      {
        executed: ['idempotency_requests_total', { outcome: 'executed' }],
        replayed: ['idempotency_requests_total', { outcome: 'replayed' }],
        conflict: ['idempotency_requests_total', { outcome: 'conflict' }],
        created: requests('POST', '/api/v1/agents', 201),
        reused: requests('POST', '/api/v1/agents', 409),
      },
      async () => {
        expect((await createAgent({ 'Idempotency-Key': key }, body)).status).toBe(201);
        const replay = await createAgent({ 'Idempotency-Key': key }, body);
        expect(replay.status).toBe(201);
        expect(replay.headers['idempotent-replayed']).toBe('true');
        const reuse = await createAgent({ 'Idempotency-Key': key }, { ...body, name: 'Another name' });
        expect(reuse.status).toBe(409);
        expect(reuse.body.error.code).toBe('idempotency_key_reused');
        expect((await createAgent()).status).toBe(201);
      },
    );
    expect(delta).toEqual({ executed: 1, replayed: 1, conflict: 1, created: 3, reused: 1 });
  });

  test('concurrent attempts of one key count one outcome each (on a server engine they race, and a loser answers with the winner)', async () => {
    const key = `metrics-${randomUUID()}`;
    const body = { handle: `h${randomUUID().replace(/-/g, '').slice(0, 12)}` };
    const delta = await moved(
      {
        executed: ['idempotency_requests_total', { outcome: 'executed' }],
        replayed: ['idempotency_requests_total', { outcome: 'replayed' }],
        conflict: ['idempotency_requests_total', { outcome: 'conflict' }],
      },
      async () => {
        const answers = await Promise.all(Array.from({ length: 10 }, () => createAgent({ 'Idempotency-Key': key }, body)));
        expect(answers.filter((res) => res.status === 201 && res.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      },
    );
    expect(delta.executed + delta.replayed + delta.conflict).toBe(10);
    expect(delta.executed).toBeGreaterThanOrEqual(1);
  });
});

describe('db_query_errors_total: by SQLSTATE class, on either engine', () => {
  test('a unique violation (409 agent_handle_taken) is one class-23 query error', async () => {
    const handle = `h${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    expect((await createAgent({}, { handle })).status).toBe(201);
    const delta = await moved(
      {
        integrity: ['db_query_errors_total', { sqlstate_class: '23' }],
        taken: requests('POST', '/api/v1/agents', 409),
      },
      async () => {
        const again = await createAgent({}, { handle });
        expect(again.status).toBe(409);
        expect(again.body.error.code).toBe('agent_handle_taken');
      },
    );
    expect(delta).toEqual({ integrity: 1, taken: 1 });
  });
});

describe('the exposition', () => {
  test('a scrape is not an API request: it counts nothing', async () => {
    const first = await scrape();
    const second = await scrape();
    const total = (e: Exposition) => e.samples.filter((s) => s.name === 'http_requests_total').reduce((sum, s) => sum + s.value, 0);
    expect(total(second)).toBe(total(first));
  });

  test('no label value is a raw id or a raw path; every route label is a template of the API or "unmatched"', async () => {
    const { samples } = await scrape();
    for (const sample of samples) {
      for (const value of Object.values(sample.labels)) expect(value).not.toMatch(/[a-z]+_[0-9a-f]{24}/);
    }
    const routes = new Set(samples.filter((s) => s.name === 'http_requests_total').map((s) => s.labels.route));
    expect(routes.size).toBeGreaterThan(2);
    for (const route of routes) expect(route).toMatch(/^(unmatched|\/api\/v1(\/[a-z-]+|\/:[a-zA-Z]+)*)$/);
  });

  test('parses, and promtool check metrics accepts it', async () => {
    const text = await scrapeText();
    const { types } = parseExposition(text);
    for (const [name, type] of Object.entries({
      http_requests_total: 'counter',
      http_request_duration_seconds: 'histogram',
      auth_failures_total: 'counter',
      idempotency_requests_total: 'counter',
      rate_limit_decisions_total: 'counter',
      rate_limit_redis_fallback_active: 'gauge',
      rate_limit_store_wait_seconds: 'histogram',
      db_query_errors_total: 'counter',
      job_runs_total: 'counter',
      job_rows_removed_total: 'counter',
      job_duration_seconds: 'histogram',
      job_last_success_timestamp_seconds: 'gauge',
      process_cpu_seconds_total: 'counter',
      nodejs_heap_size_used_bytes: 'gauge',
    })) {
      expect([name, types.get(name)]).toEqual([name, type]);
    }
    expectPromtoolAccepts(text);
  });
});
