import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { join } from 'node:path';
import { Pool } from 'pg';
import { randomUrlSafe, sha256Hex } from '../libs/crypto/crypto';
import { newId } from '../libs/ids/ids';
import { applyMigrations } from '../src/database/migration-runner';
import { agents } from '../src/agents/agents.table';
import { apiKeys } from '../src/auth/api-keys.table';
import { conversations } from '../src/conversations/conversations.table';
import { orgs } from '../src/database/orgs.table';

export const AGENTS = 1_000;
export const CONVERSATIONS = 100_000;
const BATCH = 1_000;
const SOURCES = ['dashboard', 'autonomous', 'embed', 'sub-agent'] as const;
const ALL_SCOPES = [
  'agents:read', 'agents:write', 'agents:delete', 'conversations:read', 'connectors:read', 'custom_tools:read',
  'custom_tools:write', 'custom_tools:delete', 'sources:read', 'sources:write', 'sources:delete', 'chatbots:read',
  'triggers:read', 'team:read', 'analytics:read', 'org:read',
];

interface Seeded {
  orgId: string;
  token: string;
  agentIds: string[];
  /** an agent with conversations of every source, for the two-filter list */
  filterAgentId: string;
}

type AnyDb = ReturnType<typeof drizzleNodePg>;

/**
 * The volume dataset: one organization with 1,000 agents and 100,000
 * conversations, written with multi-row INSERTs in batches of 1,000 (one
 * statement per batch, all in one transaction).
 */
export async function seed(target: { databaseUrl: string } | { pgliteDir: string }): Promise<Seeded> {
  const migrationsFolder = join(__dirname, '..', '..', 'src', 'database', 'migrations');
  let db: AnyDb;
  let close: () => Promise<void>;
  if ('databaseUrl' in target) {
    const pool = new Pool({ connectionString: target.databaseUrl, max: 2 });
    db = drizzleNodePg(pool);
    const client = await pool.connect();
    try {
      await applyMigrations({ exec: async (text) => void (await client.query(text)), query: async (text, params) => (await client.query(text, params)).rows }, migrationsFolder, { concurrently: true });
    } finally {
      client.release();
    }
    close = () => pool.end();
  } else {
    const client = await PGlite.create({ dataDir: target.pgliteDir });
    const lite = drizzlePglite(client);
    await applyMigrations({ exec: async (text) => void (await client.exec(text)), query: async (text, params) => (await client.query(text, params)).rows as never }, migrationsFolder, { concurrently: false });
    db = lite as unknown as AnyDb;
    close = () => client.close();
  }

  const orgId = newId('org');
  // the token format and lookup prefix of ApiKeysService (svc_live_ + secret; 8 characters of it)
  const token = `svc_live_${randomUrlSafe(40)}`;
  const agentIds: string[] = [];
  const start = Date.now() - 90 * 24 * 3600 * 1000;
  await db.transaction(async (tx) => {
    await tx.insert(orgs).values({
      id: orgId,
      name: `Bench Org ${orgId}`,
      slug: `bench-${orgId.slice(-12)}`,
      plan: 'enterprise',
      status: 'active',
      credits: { total: 1_000_000, used: 0, remaining: 1_000_000, top_up: 0, reset_at: null },
      limits: { agents: null, connectors: null, sources: null, chatbots: null, scheduled_triggers: null, custom_tool_slots: null },
    });
    await tx.insert(apiKeys).values({
      id: newId('key'),
      orgId,
      label: 'bench',
      lookupPrefix: token.slice('svc_live_'.length, 'svc_live_'.length + 8),
      tokenHash: sha256Hex(token),
      scopes: ALL_SCOPES,
    });
    for (let i = 0; i < AGENTS; i += BATCH) {
      const rows = [];
      for (let j = i; j < Math.min(AGENTS, i + BATCH); j++) {
        const at = new Date(start + j * 60_000);
        const id = newId('agent', at);
        agentIds.push(id);
        rows.push({
          id,
          orgId,
          handle: `benchAgent${j}`,
          name: `Bench agent ${j}`,
          description: 'An agent of the volume dataset',
          model: j % 2 ? 'gpt-4o' : 'claude-sonnet',
          instructions: 'Answer politely.',
          tools: [{ name: 'web_search', connector_id: null }],
          createdAt: at,
          updatedAt: at,
        });
      }
      await tx.insert(agents).values(rows);
    }
    for (let i = 0; i < CONVERSATIONS; i += BATCH) {
      const rows = [];
      for (let j = i; j < Math.min(CONVERSATIONS, i + BATCH); j++) {
        const at = new Date(start + j * 60_000);
        const source = SOURCES[j % SOURCES.length];
        rows.push({
          id: newId('conversation', at),
          orgId,
          title: `Conversation ${j}`,
          source,
          // agents in blocks, so that every agent has conversations of every source
          agentId: agentIds[Math.floor(j / SOURCES.length) % AGENTS],
          model: j % 2 ? 'gpt-4o' : 'claude-sonnet',
          autonomous: source === 'autonomous',
          conversationNumber: source === 'sub-agent' ? null : j + 1,
          creditsUsed: j % 7,
          metadata: { ticketId: String(100_000 + j) },
          ticketIds: [String(100_000 + j)],
          messageCount: 4,
          lastMessageAt: new Date(at.getTime() + 120_000),
          createdAt: at,
          updatedAt: at,
        });
      }
      await tx.insert(conversations).values(rows);
    }
  });
  // vacuumed as well: hint bits and the visibility map set now, and no
  // autovacuum of the fresh rows in the middle of the first server's run
  await db.execute(sql`vacuum (analyze)`);
  await close();
  return { orgId, token, agentIds, filterAgentId: agentIds[7] };
}
