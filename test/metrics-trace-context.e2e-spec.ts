import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
});
afterAll(() => t.close());

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

/** The one request log line of the request with this X-Request-ID. */
function requestLine(requestId: string): Record<string, unknown> {
  const lines = t.logs.map((text) => JSON.parse(text) as Record<string, unknown>).filter((entry) => entry.msg === 'request' && entry.request_id === requestId);
  expect(lines).toHaveLength(1);
  return lines[0];
}

describe('trace context: an incoming W3C traceparent is honoured in the request log line', () => {
  test('a valid traceparent: its trace id is the line\'s trace_id; X-Request-ID works as before', async () => {
    const res = await t.http.get('/api/v1/org').set('Authorization', org.auth).set('traceparent', TRACEPARENT).set('X-Request-ID', 'trace-valid-1');
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('trace-valid-1');
    expect(res.body.meta.request_id).toBe('trace-valid-1');
    expect(requestLine('trace-valid-1')).toMatchObject({ request_id: 'trace-valid-1', trace_id: TRACE_ID, status: 200 });
  });

  test('errors before and outside routing carry it too: unknown route, bad percent-encoding, body parser, authentication', async () => {
    const cases: Array<[string, () => Promise<unknown>]> = [
      ['trace-404', () => t.http.get('/api/v1/no-such-thing').set('traceparent', TRACEPARENT).set('X-Request-ID', 'trace-404')],
      ['trace-outside', () => t.http.get('/elsewhere').set('traceparent', TRACEPARENT).set('X-Request-ID', 'trace-outside')],
      ['trace-encoding', () => t.http.get('/api/v1/agents/%zz').set('traceparent', TRACEPARENT).set('X-Request-ID', 'trace-encoding')],
      [
        'trace-parser',
        () => t.http.post('/api/v1/agents').set('Authorization', org.auth).set('Content-Type', 'application/json').set('traceparent', TRACEPARENT).set('X-Request-ID', 'trace-parser').send('{bad'),
      ],
      ['trace-401', () => t.http.get('/api/v1/org').set('traceparent', TRACEPARENT).set('X-Request-ID', 'trace-401')],
    ];
    for (const [requestId, send] of cases) {
      await send();
      expect(requestLine(requestId).trace_id).toBe(TRACE_ID);
    }
  });

  test('no traceparent: a fresh trace id per request', async () => {
    await t.http.get('/api/v1/org').set('Authorization', org.auth).set('X-Request-ID', 'trace-none-1');
    await t.http.get('/api/v1/org').set('Authorization', org.auth).set('X-Request-ID', 'trace-none-2');
    const first = requestLine('trace-none-1').trace_id;
    const second = requestLine('trace-none-2').trace_id;
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(second).toMatch(/^[0-9a-f]{32}$/);
    expect(first).not.toBe(second);
  });

  test.each([
    ['uppercase hex', `00-${TRACE_ID.toUpperCase()}-00f067aa0ba902b7-01`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['version ff', `ff-${TRACE_ID}-00f067aa0ba902b7-01`],
    ['truncated', TRACEPARENT.slice(0, 40)],
    ['garbage', 'not a traceparent'],
  ])('an invalid traceparent (%s) is replaced by a fresh trace id', async (name, traceparent) => {
    const requestId = `trace-invalid-${name.replace(/\W+/g, '-')}`;
    const res = await t.http.get('/api/v1/org').set('Authorization', org.auth).set('traceparent', traceparent).set('X-Request-ID', requestId);
    expect(res.status).toBe(200);
    const traceId = requestLine(requestId).trace_id;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).not.toBe(TRACE_ID);
    expect(traceId).not.toBe('0'.repeat(32));
  });
});
