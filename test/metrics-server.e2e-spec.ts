import { request as httpRequest } from 'node:http';
import { MetricsServer } from '../src/metrics/metrics.server';
import { parseExposition } from './support/prometheus';
import { createTestApp, type TestApp } from './support/test-app';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function call(port: number, method: string, path: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('METRICS_PORT: GET /metrics on a port of its own', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await createTestApp({ metricsPort: 0, host: '127.0.0.1' });
    port = t.app.get(MetricsServer).address()!.port;
  });
  afterAll(() => t.close());

  test('answers the Prometheus text format', async () => {
    const reply = await call(port, 'GET', '/metrics');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(parseExposition(reply.body).types.get('http_requests_total')).toBe('counter');
  });

  test('HEAD has the headers and no body; other methods 405; other paths 404', async () => {
    const head = await call(port, 'HEAD', '/metrics');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    const post = await call(port, 'POST', '/metrics');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect((await call(port, 'GET', '/api/v1/org')).status).toBe(404);
    expect((await call(port, 'GET', '/')).status).toBe(404);
  });

  test('the API port does not serve it', async () => {
    for (const path of ['/metrics', '/api/v1/metrics']) {
      const res = await t.http.get(path);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  test('closes with the application', async () => {
    const other = await createTestApp({ metricsPort: 0, host: '127.0.0.1' });
    const otherPort = other.app.get(MetricsServer).address()!.port;
    expect((await call(otherPort, 'GET', '/metrics')).status).toBe(200);
    await other.close();
    await expect(call(otherPort, 'GET', '/metrics')).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('metrics are off by default', () => {
  test('no METRICS_PORT: no server, nothing collected', async () => {
    const t = await createTestApp();
    try {
      expect(t.config.metricsPort).toBeNull();
      expect(t.app.get(MetricsServer).address()).toBeNull();
    } finally {
      await t.close();
    }
  });

  test('a port that cannot be opened fails the start naming METRICS_PORT', async () => {
    const first = await createTestApp({ metricsPort: 0, host: '127.0.0.1' });
    try {
      const taken = first.app.get(MetricsServer).address()!.port;
      await expect(createTestApp({ metricsPort: taken, host: '127.0.0.1' })).rejects.toThrow(new RegExp(`^METRICS_PORT ${taken}: listen EADDRINUSE`));
    } finally {
      await first.close();
    }
  });
});
