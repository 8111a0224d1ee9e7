import { PGlite } from '@electric-sql/pglite';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Pool } from 'pg';
import { newId } from '../libs/ids/ids';

/**
 * Baseline (b), the data ceiling: a minimal node:http handler that checks the
 * key against an in-memory map and runs the same SQL as the service on the
 * same database (PostgreSQL through a pg pool with named prepared statements,
 * or the same PGlite directory), then answers the envelope.
 */
type Row = Record<string, unknown>;
interface Db {
  query(name: string, text: string, values: unknown[]): Promise<Row[]>;
  transaction<T>(fn: (q: Db['query']) => Promise<T>): Promise<T>;
}

async function openDb(): Promise<Db> {
  if (process.env.DATABASE_URL) {
    const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
    const query = async (name: string, text: string, values: unknown[]) => (await pool.query({ name, text, values })).rows as Row[];
    return {
      query,
      async transaction(fn) {
        const client = await pool.connect();
        try {
          await client.query('begin');
          const result = await fn(async (name, text, values) => (await client.query({ name, text, values })).rows as Row[]);
          await client.query('commit');
          return result;
        } catch (error) {
          await client.query('rollback');
          throw error;
        } finally {
          client.release();
        }
      },
    };
  }
  const lite = await PGlite.create({ dataDir: process.env.PGLITE_DIR! });
  return {
    query: async (_name, text, values) => (await lite.query<Row>(text, values)).rows,
    transaction: (fn) => lite.transaction((tx) => fn(async (_name, text, values) => (await tx.query<Row>(text, values)).rows)),
  };
}

const SUMMARY = `id, title, source, agent_id, model, autonomous, is_onboarding, is_simulation, conversation_number,
  parent_conversation_id, credits_used, metadata, message_count, last_message_at, created_at, updated_at`;

async function main(): Promise<void> {
  const db = await openDb();
  // the in-memory key map: token hash → organization
  const keys = new Map<string, string>();
  for (const row of await db.query('keys', 'select token_hash, org_id from api_keys where revoked_at is null', [])) {
    keys.set(String(row.token_hash), String(row.org_id));
  }
  let created = 0;

  async function handle(method: string, url: string, orgId: string, body: Row | null): Promise<[number, unknown, string | null | undefined]> {
    const [path, search = ''] = url.split('?');
    const params = new URLSearchParams(search);
    let m: RegExpExecArray | null;
    if (method === 'GET' && path === '/api/v1/org') {
      const rows = await db.query('org', 'select * from orgs where id = $1', [orgId]);
      return rows[0] ? [200, rows[0], undefined] : [404, null, undefined];
    }
    if (method === 'GET' && (m = /^\/api\/v1\/agents\/([^/]+)$/.exec(path))) {
      const rows = await db.query('agent', 'select * from agents where org_id = $1 and id = $2 and deleted_at is null', [orgId, m[1]]);
      return rows[0] ? [200, rows[0], undefined] : [404, null, undefined];
    }
    if (method === 'GET' && path === '/api/v1/agents') {
      const rows = await db.query('agents', 'select * from agents where org_id = $1 and deleted_at is null order by id desc limit $2', [orgId, 26]);
      return [200, rows.slice(0, 25), rows.length > 25 ? String(rows[24].id) : null];
    }
    if (method === 'GET' && path === '/api/v1/conversations') {
      const rows = await db.query(
        'conversations',
        `select ${SUMMARY} from conversations where org_id = $1 and agent_id = $2 and source = $3 order by id desc limit $4`,
        [orgId, params.get('agent_id'), params.get('source'), 26],
      );
      return [200, rows.slice(0, 25), rows.length > 25 ? String(rows[24].id) : null];
    }
    if (method === 'POST' && path === '/api/v1/agents') {
      const row = await db.transaction(async (q) => {
        await q('org_limits', 'select limits from orgs where id = $1 for update', [orgId]);
        await q('agents_count', 'select count(*) from agents where org_id = $1 and deleted_at is null', [orgId]);
        const rows = await q(
          'agent_insert',
          'insert into agents (id, org_id, handle, name, instructions) values ($1, $2, $3, $4, $5) returning *',
          [newId('agent'), orgId, body?.handle, body?.name, body?.instructions],
        );
        return rows[0];
      });
      created += 1;
      return [201, row, undefined];
    }
    if (method === 'PATCH' && (m = /^\/api\/v1\/agents\/([^/]+)$/.exec(path))) {
      const rows = await db.query(
        'agent_update',
        'update agents set name = $3, updated_at = now() where org_id = $1 and id = $2 and deleted_at is null returning *',
        [orgId, m[1], body?.name],
      );
      return rows[0] ? [200, rows[0], undefined] : [404, null, undefined];
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
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      const orgId = token ? keys.get(createHash('sha256').update(token).digest('hex')) : undefined;
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
  void created;
}

main().catch((error: Error) => {
  process.stderr.write(`baseline-data failed: ${error.message}\n`);
  process.exit(1);
});
