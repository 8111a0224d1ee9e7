import { connect, type AddressInfo } from 'node:net';
import { createOrg } from './support/factories';
import { scrapeMetrics, type Exposition } from './support/prometheus';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * Every answer in the envelope: what Node's HTTP parser refuses before any
 * request exists, and what HTTP itself requires of a request (Host, Expect),
 * is answered like every other error — the error envelope, a request id in
 * the body and in X-Request-ID, one log line, the HTTP metrics.
 */

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: { error?: { code: string; message: string; request_id: string } };
  raw: string;
}

describe('answers Node or Fastify would write themselves', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({ metricsPort: 0 });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  /** Writes `bytes` on a new connection and reads until the server closes it. */
  function send(bytes: string | Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let raw = '';
      socket.on('data', (chunk) => (raw += chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        const [head, ...rest] = raw.split('\r\n\r\n');
        const [statusLine, ...lines] = head.split('\r\n');
        const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
        const text = rest.join('\r\n\r\n');
        let body = {};
        try {
          body = JSON.parse(text) as object;
        } catch {
          /* asserted below */
        }
        resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw });
      });
      socket.write(bytes);
    });
  }

  const cases: Array<[string, number, string, string | Buffer]> = [
    ['a bare CR in a header value', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: a\rb\r\n\r\n'],
    ['Content-Length beside Transfer-Encoding (smuggling)', 400, 'bad_request', 'POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['two different Content-Lengths', 400, 'bad_request', 'POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'],
    ['a request line that is not HTTP', 400, 'bad_request', 'HELLO\r\n\r\n'],
    ['a 16 KiB header', 431, 'headers_too_large', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(16 * 1024)}\r\n\r\n`],
    ['3,000 headers', 431, 'headers_too_large', `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3000 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`],
    ['HTTP/1.1 without Host', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\n\r\n'],
    ['CONNECT (this server is no proxy)', 400, 'bad_request', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'],
    ['an Expect other than 100-continue', 417, 'expectation_failed', 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n'],
    // RFC 9112 §3.2: more than one Host line, or an invalid Host value, is a 400 (Node keeps the first silently)
    ['two Host headers', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'],
    ['two equal Host headers', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: x\r\nhost: x\r\n\r\n'],
    ['two Host headers on HTTP/1.0', 400, 'bad_request', 'GET /healthz HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n'],
    ['a Host with a space', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: exa mple.com\r\n\r\n'],
    ['a Host with user info', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: user@example.com\r\n\r\n'],
    ['a Host with a path', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: example.com/x\r\n\r\n'],
    ['a Host with a port that is not a number', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: example.com:80a\r\n\r\n'],
    // Node keeps the first Authorization; a proxy in front may have read the second
    ['two Authorization headers', 400, 'bad_request', 'GET /api/v1/org HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n'],
    ['two equal Authorization headers on a public path', 400, 'bad_request', 'GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nauthorization: Bearer a\r\n\r\n'],
  ];

  it.each(cases)('%s: %i %s in the envelope with a request id, logged and counted', async (_what, status, code, bytes) => {
    const before = await scrapeMetrics(t.app);
    const answer = await send(bytes);
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status, code });
    const requestId = answer.headers['x-request-id'];
    expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);
    expect(answer.body.error?.request_id).toBe(requestId);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers.connection).toBe('close');
    const logged = t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.request_id === requestId);
    expect(logged).toEqual([expect.objectContaining({ msg: 'request', status })]);
    const after = await scrapeMetrics(t.app);
    // every series of this status, whatever its method and route
    const counted = (exposition: Exposition) =>
      exposition.samples.filter((s) => s.name === 'http_requests_total' && s.labels.status === String(status)).reduce((sum, s) => sum + s.value, 0);
    expect(counted(after) - counted(before)).toBe(1);
  });

  it('a well-formed X-Request-ID is kept on an answer the request hooks give (Expect)', async () => {
    const answer = await send('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-ID: mine-1\r\nExpect: nope\r\n\r\n');
    expect(answer.status).toBe(417);
    expect(answer.headers['x-request-id']).toBe('mine-1');
    expect(answer.body.error?.request_id).toBe('mine-1');
  });

  describe('Expect: 100-continue: the body is invited only once the key is valid', () => {
    const body = JSON.stringify({ handle: `continued${Date.now().toString(36)}`, name: 'Continued', instructions: 'x' });
    const head = (authorization: string | null) =>
      `POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${authorization ? `Authorization: ${authorization}\r\n` : ''}Expect: 100-continue\r\n\r\n`;

    it.each([
      ['no key', null],
      ['a wrong key', 'Bearer sk_live_not_a_key_of_anyone_0000000000'],
    ])('%s: 401 from the headers, no 100 Continue, the body never sent', async (_name, authorization) => {
      const answer = await send(head(authorization));
      expect(answer.raw).not.toContain('100 Continue');
      expect(answer.status).toBe(401);
      expect(answer.body.error?.code).toBe('unauthorized');
    });

    it('a valid key: 100 Continue first, then the body is read and answered', async () => {
      const org = await createOrg(t.app);
      const socket = connect(port, '127.0.0.1');
      let raw = '';
      const closed = new Promise<void>((resolve, reject) => {
        socket.on('error', reject);
        socket.on('close', () => resolve());
      });
      // the body goes only after the invitation, as a client that waits for it does
      socket.on('data', (chunk) => {
        const first = raw === '';
        raw += chunk;
        if (first) socket.write(body);
      });
      socket.write(head(org.auth));
      await closed;
      expect(raw.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
      expect(raw.slice(raw.indexOf('\r\n\r\n') + 4)).toMatch(/^HTTP\/1\.1 201 /);
    });
  });

  it('an Upgrade request (no protocol is upgraded here) is answered as a plain request', async () => {
    const answer = await send('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n');
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it.each(['localhost', 'example.com:8080', '127.0.0.1:3000', '[::1]:3000', 'xn--bcher-kva.example.', ''])('Host %j is valid: answered', async (host) => {
    const answer = await send(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    expect(answer.status).toBe(200);
  });

  describe('a method no route serves is a 404 on every path, before authentication and before its body', () => {
    const methods = ['QUERY', 'PUT', 'OPTIONS', 'PROPFIND', 'TRACE', 'SEARCH'];
    const paths = ['/api/v1/agents', '/api/v1/org', '/api/v1/no-such-thing', '/healthz', '/docs'];
    const bodies: Array<[string, string]> = [
      ['no body', ''],
      ['a JSON body', 'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'],
      ['a body with no Content-Type', 'Content-Length: 5\r\n\r\nhello'],
    ];
    it.each(methods)('%s', async (method) => {
      for (const path of paths) {
        for (const [, body] of bodies) {
          const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n`;
          const answer = await send(body === '' ? `${head}\r\n` : `${head}${body}`);
          expect({ method, path, status: answer.status, code: answer.body.error?.code, message: answer.body.error?.message }).toEqual({
            method,
            path,
            status: 404,
            code: 'not_found',
            message: 'No such endpoint.',
          });
          expect(answer.headers.allow).toBeUndefined();
        }
      }
    });

    it('a body over the limit is not read: still the 404, and the connection is closed', async () => {
      const answer = await send(`QUERY /api/v1/agents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n{`);
      expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 404, code: 'not_found' });
      expect(answer.headers.connection).toBe('close');
    });

    it('the methods routes serve keep their answers (an unknown path is the same 404, after the body is read)', async () => {
      expect((await send('GET /api/v1/agents HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).status).toBe(401);
      expect((await send('DELETE /api/v1/no-such-thing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).body.error?.code).toBe('not_found');
    });
  });

  it('the service keeps answering after each refusal', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(res.status).toBe(200);
  });
});
