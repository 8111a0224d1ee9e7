import { newId } from '../libs/ids/ids';
import { AgentsTrashService } from '../src/agents/agents-trash.service';
import { trashWindowStart } from '../src/agents/agents.rules';
import { readAgentRow } from './support/agent-rows';
import { createOrg } from './support/factories';
import { insertAgent, insertConversation } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';

describe('Analytics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const at = (iso: string) => new Date(iso);

  describe('GET /analytics/agents/{agent_id}: totals and a daily series over [since, until]', () => {
    it('aggregates only the agent’s conversations inside the window', async () => {
      const org = await createOrg(t.app);
      const db = t.connection.db;
      const agentId = await insertAgent(db, org.orgId);
      const otherAgent = await insertAgent(db, org.orgId);
      const thread = (n: number) => Array.from({ length: n }, (_, i) => ({ role: 'user', content: `m${i}` }));
      await insertConversation(db, org.orgId, { agentId, source: 'dashboard', creditsUsed: 3, createdAt: at('2026-04-01T10:00:00Z'), metadata: { ticketId: 1 } }, thread(2));
      await insertConversation(db, org.orgId, { agentId, source: 'autonomous', autonomous: true, creditsUsed: 5, createdAt: at('2026-04-01T23:59:59Z'), triggerPayload: { ticket: { id: '1' } } }, thread(4));
      await insertConversation(db, org.orgId, { agentId, source: 'embed', creditsUsed: 1, createdAt: at('2026-04-03T00:00:00Z'), metadata: { ticket_id: 'T-2' }, isSimulation: true }, thread(1));
      await insertConversation(db, org.orgId, { agentId, source: 'sub-agent', conversationNumber: null, creditsUsed: 2, createdAt: at('2026-04-03T12:00:00Z') });
      // outside the window, or another agent: not counted
      await insertConversation(db, org.orgId, { agentId, creditsUsed: 100, createdAt: at('2026-03-31T23:59:59Z') }, thread(9));
      await insertConversation(db, org.orgId, { agentId, creditsUsed: 100, createdAt: at('2026-04-04T00:00:01Z') }, thread(9));
      await insertConversation(db, org.orgId, { agentId: otherAgent, creditsUsed: 100, createdAt: at('2026-04-02T00:00:00Z') }, thread(9));

      const res = await t.http
        .get(`/api/v1/analytics/agents/${agentId}?since=2026-04-01T00:00:00Z&until=2026-04-04T00:00:00Z`)
        .set('Authorization', org.auth);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        agent_id: agentId,
        window: { since: '2026-04-01T00:00:00.000Z', until: '2026-04-04T00:00:00.000Z' },
        totals: {
          conversations: 4,
          messages: 7,
          credits_used: 11,
          autonomous: 1,
          non_autonomous: 3,
          simulations: 1,
          distinct_tickets: 2,
          by_source: { dashboard: 1, autonomous: 1, embed: 1, 'sub-agent': 1 },
        },
        daily: [
          { date: '2026-04-04', conversations: 0, messages: 0, credits_used: 0, autonomous: 0 },
          { date: '2026-04-03', conversations: 2, messages: 1, credits_used: 3, autonomous: 0 },
          { date: '2026-04-02', conversations: 0, messages: 0, credits_used: 0, autonomous: 0 },
          { date: '2026-04-01', conversations: 2, messages: 6, credits_used: 8, autonomous: 1 },
        ],
      });
      expect(res.body.meta.next_cursor).toBeNull();
    });

    it('paginates the daily series newest first, every day once, totals on every page', async () => {
      const org = await createOrg(t.app);
      const agentId = await insertAgent(t.connection.db, org.orgId);
      await insertConversation(t.connection.db, org.orgId, { agentId, createdAt: at('2026-04-02T08:00:00Z') });
      const base = `/api/v1/analytics/agents/${agentId.slice('agent_'.length)}?since=2026-04-01T00:00:00Z&until=2026-04-05T12:00:00Z&limit=2`;
      const days: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: import('supertest').Response = await t.http.get(`${base}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`).set('Authorization', org.auth);
        expect(res.status).toBe(200);
        expect(res.body.data.totals.conversations).toBe(1);
        days.push(...res.body.data.daily.map((d: { date: string }) => d.date));
        cursor = res.body.meta.next_cursor;
        pages += 1;
      } while (cursor);
      expect(pages).toBe(3);
      expect(days).toEqual(['2026-04-05', '2026-04-04', '2026-04-03', '2026-04-02', '2026-04-01']);
    });

    it('defaults to the last 30 days', async () => {
      const org = await createOrg(t.app);
      const agentId = await insertAgent(t.connection.db, org.orgId);
      await insertConversation(t.connection.db, org.orgId, { agentId, createdAt: new Date(Date.now() - 2 * 86_400_000) });
      await insertConversation(t.connection.db, org.orgId, { agentId, createdAt: new Date(Date.now() - 40 * 86_400_000) });
      const res = await t.http.get(`/api/v1/analytics/agents/${agentId}?limit=100`).set('Authorization', org.auth);
      expect(res.status).toBe(200);
      expect(res.body.data.totals.conversations).toBe(1);
      expect(res.body.data.daily.length).toBeGreaterThanOrEqual(30);
      expect(res.body.data.daily.length).toBeLessThanOrEqual(31);
    });

    it('a soft-deleted agent (still in the trash) keeps its analytics', async () => {
      const org = await createOrg(t.app);
      const agentId = await insertAgent(t.connection.db, org.orgId, { deletedAt: new Date() });
      const res = await t.http.get(`/api/v1/analytics/agents/${agentId}`).set('Authorization', org.auth);
      expect(res.status).toBe(200);
      expect(res.body.data.totals.conversations).toBe(0);
    });

    it('an agent soft-deleted beyond the trash window is agent_not_found on every agent path, before the purge and after, as the purge decides', async () => {
      const org = await createOrg(t.app);
      const now = new Date();
      // a minute either side of the window's start, so the requests below fall on the same side
      const past = await insertAgent(t.connection.db, org.orgId, { deletedAt: new Date(trashWindowStart(now).getTime() - 60_000) });
      const inTrash = await insertAgent(t.connection.db, org.orgId, { deletedAt: new Date(trashWindowStart(now).getTime() + 60_000) });
      await insertConversation(t.connection.db, org.orgId, { agentId: past });
      const paths = (id: string): Array<[string, string]> => [
        ['get', `/api/v1/analytics/agents/${id}`],
        ['get', `/api/v1/agents/${id}`],
        ['patch', `/api/v1/agents/${id}`],
        ['delete', `/api/v1/agents/${id}`],
      ];
      const expectNotFound = async (id: string) => {
        for (const [method, path] of paths(id)) {
          const res = await t.http[method as 'get'](path).set('Authorization', org.auth).send(method === 'patch' ? { name: 'x' } : undefined);
          expect([method, path, res.status, res.body.error?.code]).toEqual([method, path, 404, 'agent_not_found']);
        }
      };
      await expectNotFound(past);
      // still in the trash: analytics answer, the agent itself is gone from the agent paths
      expect((await t.http.get(`/api/v1/analytics/agents/${inTrash}`).set('Authorization', org.auth)).status).toBe(200);

      // the purge at the same instant removes exactly the agent the rule calls past the window
      await t.app.get(AgentsTrashService).purgeExpiredTrash(now);
      expect(await readAgentRow(t, org.orgId, past)).toBeUndefined();
      expect(await readAgentRow(t, org.orgId, inTrash)).toBeDefined();
      await expectNotFound(past);
    });

    it('unknown, malformed and other-org agents are 404 agent_not_found', async () => {
      const orgA = await createOrg(t.app);
      const orgB = await createOrg(t.app);
      const agentId = await insertAgent(t.connection.db, orgA.orgId);
      for (const path of [agentId, newId('agent'), 'agent_nope', newId('conversation')]) {
        const res = await t.http.get(`/api/v1/analytics/agents/${path}`).set('Authorization', orgB.auth);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('agent_not_found');
      }
    });

    it.each([
      ['?since=yesterday', 'since'],
      ['?until=2026-04-31T00:00:00Z', 'until'],
      ['?since=2026-04-02T00:00:00Z&until=2026-04-01T00:00:00Z', 'since'],
      ['?limit=0', 'limit'],
    ])('%s → 422 naming %s', async (query, param) => {
      const org = await createOrg(t.app);
      const agentId = await insertAgent(t.connection.db, org.orgId);
      const res = await t.http.get(`/api/v1/analytics/agents/${agentId}${query}`).set('Authorization', org.auth);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual([param]);
    });

    it('needs analytics:read', async () => {
      const org = await createOrg(t.app);
      const agentId = await insertAgent(t.connection.db, org.orgId);
      const key = await org.key(['agents:read']);
      const res = await t.http.get(`/api/v1/analytics/agents/${agentId}`).set('Authorization', key.auth);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
    });
  });
});
