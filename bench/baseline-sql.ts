import { PGlite } from '@electric-sql/pglite';
import { createHash } from 'node:crypto';
import { Pool } from 'pg';
import { newId } from '../libs/ids/ids';

/**
 * The SQL of the two data baselines, (b) bare node:http and (c) bare NestJS:
 * the same statements on the same database as the service (PostgreSQL
 * through a pg pool with named prepared statements, or the same PGlite
 * directory), and the same in-memory key map.
 */
export type Row = Record<string, unknown>;
type Query = (name: string, text: string, values: unknown[]) => Promise<Row[]>;
interface Db {
  query: Query;
  transaction<T>(fn: (q: Query) => Promise<T>): Promise<T>;
}

async function openDb(): Promise<Db> {
  if (process.env.DATABASE_URL) {
    const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
    const query: Query = async (name, text, values) => (await pool.query({ name, text, values })).rows as Row[];
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

/** The benched operations; a list answers `[items, next_cursor]`. */
export class BenchSql {
  private constructor(
    private readonly db: Db,
    /** token hash → organization */
    private readonly keys: Map<string, string>,
  ) {}

  static async open(): Promise<BenchSql> {
    const db = await openDb();
    const keys = new Map<string, string>();
    for (const row of await db.query('keys', 'select token_hash, org_id from api_keys where revoked_at is null', [])) {
      keys.set(String(row.token_hash), String(row.org_id));
    }
    return new BenchSql(db, keys);
  }

  /** The organization of `Authorization: Bearer <key>`, or undefined. */
  orgOf(authorization: string | undefined): string | undefined {
    const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    return token ? this.keys.get(createHash('sha256').update(token).digest('hex')) : undefined;
  }

  async org(orgId: string): Promise<Row | undefined> {
    return (await this.db.query('org', 'select * from orgs where id = $1', [orgId]))[0];
  }

  async agent(orgId: string, id: string): Promise<Row | undefined> {
    return (await this.db.query('agent', 'select * from agents where org_id = $1 and id = $2 and deleted_at is null', [orgId, id]))[0];
  }

  async agents(orgId: string): Promise<[Row[], string | null]> {
    const rows = await this.db.query('agents', 'select * from agents where org_id = $1 and deleted_at is null order by id desc limit $2', [orgId, 26]);
    return [rows.slice(0, 25), rows.length > 25 ? String(rows[24].id) : null];
  }

  /** The bench's two lists: no filter (sub-agent runs left out, as the service does) or `agent_id` and `source`. */
  async conversations(orgId: string, agentId: string | undefined, source: string | undefined): Promise<[Row[], string | null]> {
    const rows =
      agentId === undefined && source === undefined
        ? await this.db.query('conversations_all', `select ${SUMMARY} from conversations where org_id = $1 and source <> 'sub-agent' order by id desc limit $2`, [orgId, 26])
        : await this.db.query(
            'conversations',
            `select ${SUMMARY} from conversations where org_id = $1 and agent_id = $2 and source = $3 order by id desc limit $4`,
            [orgId, agentId, source, 26],
          );
    return [rows.slice(0, 25), rows.length > 25 ? String(rows[24].id) : null];
  }

  createAgent(orgId: string, body: Row | null): Promise<Row> {
    return this.db.transaction(async (q) => {
      await q('org_limits', 'select limits from orgs where id = $1 for update', [orgId]);
      await q('agents_count', 'select count(*) from agents where org_id = $1 and deleted_at is null', [orgId]);
      const rows = await q('agent_insert', 'insert into agents (id, org_id, handle, name, instructions) values ($1, $2, $3, $4, $5) returning *', [
        newId('agent'),
        orgId,
        body?.handle,
        body?.name,
        body?.instructions,
      ]);
      return rows[0];
    });
  }

  async renameAgent(orgId: string, id: string, name: unknown): Promise<Row | undefined> {
    const rows = await this.db.query(
      'agent_update',
      'update agents set name = $3, updated_at = now() where org_id = $1 and id = $2 and deleted_at is null returning *',
      [orgId, id, name],
    );
    return rows[0];
  }
}
