import { newId } from '../libs/ids/ids';
import { createOrg } from './support/factories';
import { insertConnector } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';

const SUMMARY_KEYS = ['created_at', 'id', 'is_active', 'name', 'status', 'status_reason', 'type', 'updated_at'];

describe('Connectors', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  describe('GET /connectors: ConnectorSummary list, newest first', () => {
    it('returns summaries without tools or internal fields, paginated', async () => {
      const org = await createOrg(t.app);
      const first = await insertConnector(t.connection.db, org.orgId, { status: 'auth_failed', statusReason: 'invalid_grant', isActive: false });
      const second = await insertConnector(t.connection.db, org.orgId, { type: 'slack', name: 'Slack (support)', status: 'token_expired' });
      const third = await insertConnector(t.connection.db, org.orgId, { tools: [{ name: 'search_tickets' }] });

      const page1 = await t.http.get('/api/v1/connectors?limit=2').set('Authorization', org.auth);
      expect(page1.status).toBe(200);
      expect(page1.body.data.map((c: { id: string }) => c.id)).toEqual([third, second]);
      for (const item of page1.body.data) expect(Object.keys(item).sort()).toEqual(SUMMARY_KEYS);
      expect(page1.body.data[1]).toMatchObject({ type: 'slack', name: 'Slack (support)', status: 'token_expired', status_reason: null, is_active: true });

      const page2 = await t.http.get(`/api/v1/connectors?limit=2&cursor=${encodeURIComponent(page1.body.meta.next_cursor)}`).set('Authorization', org.auth);
      expect(page2.body.data.map((c: { id: string }) => c.id)).toEqual([first]);
      expect(page2.body.data[0]).toMatchObject({ status: 'auth_failed', status_reason: 'invalid_grant', is_active: false });
      expect(page2.body.meta.next_cursor).toBeNull();
    });

    it('ignores unknown query parameters (docs/decisions.md) and needs connectors:read', async () => {
      const org = await createOrg(t.app);
      const ignored = await t.http.get('/api/v1/connectors?type=slack').set('Authorization', org.auth);
      expect(ignored.status).toBe(200);
      const key = await org.key(['conversations:read']);
      const denied = await t.http.get('/api/v1/connectors').set('Authorization', key.auth);
      expect(denied.status).toBe(403);
      expect(denied.body.error.code).toBe('insufficient_scope');
    });
  });

  describe('GET /connectors/{id}: ConnectorDetail with tools', () => {
    it('returns the tools, prefixed or bare id', async () => {
      const org = await createOrg(t.app);
      const id = await insertConnector(t.connection.db, org.orgId, {
        tools: [
          { name: 'search_tickets', label: 'Search tickets', description: 'Full-text search', type: 'read', requires_confirmation: false, disabled: false },
          { name: 'close_ticket', type: 'write', requires_confirmation: true, disabled: true },
        ],
      });
      for (const path of [id, id.slice('connector_'.length)]) {
        const res = await t.http.get(`/api/v1/connectors/${path}`).set('Authorization', org.auth);
        expect(res.status).toBe(200);
        expect(Object.keys(res.body.data).sort()).toEqual([...SUMMARY_KEYS, 'tools'].sort());
        expect(res.body.data.id).toBe(id);
        expect(res.body.data.tools).toEqual([
          { name: 'search_tickets', label: 'Search tickets', description: 'Full-text search', type: 'read', requires_confirmation: false, disabled: false },
          { name: 'close_ticket', type: 'write', requires_confirmation: true, disabled: true },
        ]);
      }
    });

    it('unknown, malformed and other-org ids are 404 not_found; org B lists nothing of org A', async () => {
      const orgA = await createOrg(t.app);
      const orgB = await createOrg(t.app);
      const id = await insertConnector(t.connection.db, orgA.orgId);
      for (const path of [id, id.slice('connector_'.length), newId('connector'), 'connector_xyz']) {
        const res = await t.http.get(`/api/v1/connectors/${path}`).set('Authorization', orgB.auth);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      const listB = await t.http.get('/api/v1/connectors').set('Authorization', orgB.auth);
      expect(listB.body.data).toEqual([]);
    });
  });
});
