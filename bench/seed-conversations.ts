import { sql } from 'drizzle-orm';
import { newObjectIdHex } from '../libs/ids/ids';
import type { Database } from '../src/database/database.types';
import { conversations } from '../src/conversations/conversations.table';

interface SeedConversationsOptions {
  /** rows per multi-row INSERT; each batch is one transaction */
  batchSize?: number;
  /** agent ids to spread the conversations over */
  agentIds?: string[];
  /** the oldest conversation's creation time; the rest follow in order up to now */
  since?: Date;
}

const SOURCES = ['dashboard', 'dashboard', 'dashboard', 'dashboard', 'autonomous', 'autonomous', 'autonomous', 'embed', 'embed', 'sub-agent'];
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4'];
const WORDS = ['refund', 'order', 'login', 'invoice', 'shipping', 'password', 'export', 'upgrade', 'webhook', 'billing', 'account', 'delivery'];

/** Deterministic pseudo-random numbers, so two runs seed the same data. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 0x1_0000_0000;
  };
}

/**
 * Inserts `count` conversations (no messages) into one organization, oldest
 * first, with ids whose timestamps follow `created_at`, a realistic mix of
 * sources, agents, models, metadata and ticket ids. Multi-row inserts, one
 * transaction per batch. Returns the ids of a few rows for targeted lookups.
 */
export async function seedConversations(db: Database, orgId: string, count: number, options: SeedConversationsOptions = {}): Promise<{ firstId: string; lastId: string }> {
  const batchSize = options.batchSize ?? 1000;
  const agentIds = options.agentIds ?? Array.from({ length: 20 }, (_, i) => `agent_${(0x6650a100 + i).toString(16).padStart(8, '0')}0000000000000000`);
  const since = (options.since ?? new Date(Date.now() - 365 * 86_400_000)).getTime();
  const step = (Date.now() - since) / Math.max(count, 1);
  const random = generator(count);
  let number = 0;
  let firstId = '';
  let lastId = '';
  const parents: string[] = [];
  for (let start = 0; start < count; start += batchSize) {
    const rows: Array<typeof conversations.$inferInsert> = [];
    for (let i = start; i < Math.min(count, start + batchSize); i += 1) {
      const createdAt = new Date(since + i * step);
      const id = `conv_${newObjectIdHex(createdAt)}`;
      const source = SOURCES[Math.floor(random() * SOURCES.length)];
      const isSubAgent = source === 'sub-agent' && parents.length > 0;
      const ticket = 100_000 + i;
      const metadata: Record<string, unknown> | null =
        source === 'autonomous'
          ? i % 2 === 0
            ? { ticketId: ticket, channel: 'email' }
            : { ticket_id: String(ticket), channel: 'web' }
          : source === 'embed'
            ? { page: `/docs/${WORDS[i % WORDS.length]}`, widget: 'help' }
            : null;
      rows.push({
        id,
        orgId,
        title: `${WORDS[Math.floor(random() * WORDS.length)]} question about ${WORDS[Math.floor(random() * WORDS.length)]} #${i}`,
        source: isSubAgent ? 'sub-agent' : source === 'sub-agent' ? 'dashboard' : source,
        agentId: agentIds[Math.floor(random() * agentIds.length)],
        model: MODELS[Math.floor(random() * MODELS.length)],
        autonomous: source === 'autonomous',
        isOnboarding: i === 0,
        isSimulation: random() < 0.02,
        conversationNumber: isSubAgent ? null : ++number,
        parentConversationId: isSubAgent ? parents[Math.floor(random() * parents.length)] : null,
        creditsUsed: Math.floor(random() * 20),
        metadata,
        triggerPayload: source === 'autonomous' ? { ticket: { id: ticket } } : null,
        ticketIds: source === 'autonomous' ? [String(ticket)] : [],
        messageCount: 2 + Math.floor(random() * 10),
        lastMessageAt: new Date(createdAt.getTime() + 5 * 60_000),
        createdAt,
        updatedAt: createdAt,
      });
      if (!isSubAgent && parents.length < 1000 && random() < 0.05) parents.push(id);
      if (!firstId) firstId = id;
      lastId = id;
    }
    await db.transaction(async (tx) => {
      await tx.insert(conversations).values(rows);
    });
  }
  await db.execute(sql`analyze conversations`);
  return { firstId, lastId };
}
