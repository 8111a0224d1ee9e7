import { newId } from '../libs/ids/ids';
import { createOrg } from './support/factories';
import { insertChatbot } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';

const CHATBOT_KEYS = [
  'agent_id',
  'allow_write_tools',
  'allowed_domains',
  'created_at',
  'id',
  'is_active',
  'name',
  'public_id',
  'theme',
  'updated_at',
  'welcome_message',
];

describe('Chatbots', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  describe('GET /chatbots and /chatbots/{id}: the Chatbot shape', () => {
    it('returns every field, nullable ones null, no internal fields', async () => {
      const org = await createOrg(t.app);
      const agentId = newId('agent');
      const plain = await insertChatbot(t.connection.db, org.orgId);
      const full = await insertChatbot(t.connection.db, org.orgId, {
        agentId,
        isActive: false,
        deactivatedReason: 'agent_deleted',
        allowWriteTools: true,
        allowedDomains: ['example.com', 'help.example.com'],
        theme: { primary: '#112233' },
        welcomeMessage: 'Hi! How can I help?',
      });
      const list = await t.http.get('/api/v1/chatbots').set('Authorization', org.auth);
      expect(list.status).toBe(200);
      expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([full, plain]);
      for (const item of list.body.data) expect(Object.keys(item).sort()).toEqual(CHATBOT_KEYS);
      expect(list.body.data[1]).toMatchObject({ agent_id: null, is_active: true, allow_write_tools: false, allowed_domains: [], theme: null, welcome_message: null });
      expect(JSON.stringify(list.body)).not.toContain('agent_deleted');

      const detail = await t.http.get(`/api/v1/chatbots/${full}`).set('Authorization', org.auth);
      expect(detail.status).toBe(200);
      expect(detail.body.data).toMatchObject({
        id: full,
        public_id: `cb_${full.slice(-24)}`,
        agent_id: agentId,
        is_active: false,
        allow_write_tools: true,
        allowed_domains: ['example.com', 'help.example.com'],
        theme: { primary: '#112233' },
        welcome_message: 'Hi! How can I help?',
      });
    });

    it('paginates newest first', async () => {
      const org = await createOrg(t.app);
      const all = [];
      for (let i = 0; i < 3; i += 1) all.push(await insertChatbot(t.connection.db, org.orgId));
      const first = await t.http.get('/api/v1/chatbots?limit=2').set('Authorization', org.auth);
      const second = await t.http.get(`/api/v1/chatbots?limit=2&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`).set('Authorization', org.auth);
      expect([...first.body.data, ...second.body.data].map((x: { id: string }) => x.id)).toEqual([...all].reverse());
      expect(second.body.meta.next_cursor).toBeNull();
    });

    it('ids are chatbot_<24 hex> only; other orgs get 404 and see none; needs chatbots:read', async () => {
      const orgA = await createOrg(t.app);
      const orgB = await createOrg(t.app);
      const id = await insertChatbot(t.connection.db, orgA.orgId);
      expect((await t.http.get(`/api/v1/chatbots/${id.slice('chatbot_'.length)}`).set('Authorization', orgA.auth)).status).toBe(404);
      const other = await t.http.get(`/api/v1/chatbots/${id}`).set('Authorization', orgB.auth);
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('not_found');
      expect((await t.http.get('/api/v1/chatbots').set('Authorization', orgB.auth)).body.data).toEqual([]);
      const key = await orgA.key(['triggers:read']);
      expect((await t.http.get('/api/v1/chatbots').set('Authorization', key.auth)).status).toBe(403);
    });
  });
});
