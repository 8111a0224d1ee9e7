import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { BenchSql, type Row } from './baseline-sql';

/**
 * Baseline (b), the data ceiling: a minimal node:http handler that checks the
 * key against an in-memory map and runs the same SQL as the service on the
 * same database, then answers the envelope.
 */
async function main(): Promise<void> {
  const sql = await BenchSql.open();

  async function handle(method: string, url: string, orgId: string, body: Row | null): Promise<[number, unknown, string | null | undefined]> {
    const [path, search = ''] = url.split('?');
    const params = new URLSearchParams(search);
    let m: RegExpExecArray | null;
    let row: Row | undefined;
    if (method === 'GET' && path === '/api/v1/org') {
      row = await sql.org(orgId);
      return row ? [200, row, undefined] : [404, null, undefined];
    }
    if (method === 'GET' && (m = /^\/api\/v1\/agents\/([^/]+)$/.exec(path))) {
      row = await sql.agent(orgId, m[1]);
      return row ? [200, row, undefined] : [404, null, undefined];
    }
    if (method === 'GET' && path === '/api/v1/agents') return [200, ...(await sql.agents(orgId))];
    if (method === 'GET' && path === '/api/v1/conversations') {
      return [200, ...(await sql.conversations(orgId, params.get('agent_id') ?? undefined, params.get('source') ?? undefined))];
    }
    if (method === 'POST' && path === '/api/v1/agents') return [201, await sql.createAgent(orgId, body), undefined];
    if (method === 'PATCH' && (m = /^\/api\/v1\/agents\/([^/]+)$/.exec(path))) {
      row = await sql.renameAgent(orgId, m[1], body?.name);
      return row ? [200, row, undefined] : [404, null, undefined];
    }
    return [404, null, undefined];
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const requestId = `req_${randomBytes(16).toString('hex')}`;
      const reply = (status: number, payload: unknown) => {
        const text = JSON.stringify(payload);
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      const orgId = sql.orgOf(req.headers.authorization);
      if (!orgId) return reply(401, { error: { code: 'unauthorized', message: 'A valid API key is required.', request_id: requestId } });
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Row) : null;
      handle(req.method ?? 'GET', req.url ?? '/', orgId, body)
        .then(([status, data, nextCursor]) =>
          status >= 400
            ? reply(status, { error: { code: 'not_found', message: 'Not found.', request_id: requestId } })
            : reply(status, { data, meta: nextCursor === undefined ? { request_id: requestId } : { request_id: requestId, next_cursor: nextCursor } }),
        )
        .catch((error: Error) => reply(500, { error: { code: 'internal_error', message: error.message, request_id: requestId } }));
    });
  });
  server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main().catch((error: Error) => {
  process.stderr.write(`baseline-data failed: ${error.message}\n`);
  process.exit(1);
});
