import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

/**
 * Baseline (a), the framework ceiling: bare node:http answering each path
 * with the same envelope the service returned, from memory (a fresh request
 * id per response, serialized per request like the service does).
 */
const bodies = JSON.parse(readFileSync(process.env.BENCH_BODIES!, 'utf8')) as Array<{ method: string; pattern: string; status: number; data: unknown }>;
const routes = bodies.map((b) => ({ ...b, regex: new RegExp(b.pattern) }));

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const route = routes.find((r) => r.method === req.method && r.regex.test(req.url ?? ''));
    const requestId = `req_${randomBytes(16).toString('hex')}`;
    if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = route
      ? JSON.stringify({ data: route.data, meta: { request_id: requestId } })
      : JSON.stringify({ error: { code: 'not_found', message: 'No such endpoint.', request_id: requestId } });
    res.writeHead(route ? route.status : 404, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
