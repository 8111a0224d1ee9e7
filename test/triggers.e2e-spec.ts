import { newId } from '../libs/ids/ids';
import { createOrg } from './support/factories';
import { insertTrigger } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';

const TRIGGER_KEYS = [
  'agent_id',
  'conditions',
  'connector_id',
  'connector_type',
  'created_at',
  'event',
  'id',
  'is_active',
  'schedule',
  'settings',
  'updated_at',
];

describe('Triggers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  describe('GET /triggers and /triggers/{id}: the Trigger shape', () => {
    it('has schedule only on cron.scheduled triggers and never the internal webhook fields', async () => {
      const org = await createOrg(t.app);
      const agentId = newId('agent');
      const connectorId = newId('connector');
      const webhook = await insertTrigger(t.connection.db, org.orgId, {
        agentId,
        connectorId,
        conditions: { priority: 'high' },
        settings: { reply: true },
        webhookId: 'wh_secret_123',
        webhookStatus: 'paused',
        isActive: false,
        deactivatedReason: 'agent_deactivated',
        // a stray schedule on a non-cron trigger is not shown
        schedule: { cron_expression: '0 * * * *', interval_hours: null, next_run_at: null, last_run_at: null, last_run_status: null },
      });
      const cron = await insertTrigger(t.connection.db, org.orgId, {
        agentId,
        connectorType: 'schedule',
        event: 'cron.scheduled',
        schedule: { cron_expression: null, interval_hours: 6, next_run_at: '2026-05-01T06:00:00Z', last_run_at: '2026-05-01T00:00:00Z', last_run_status: 'success' },
      });
      const list = await t.http.get('/api/v1/triggers').set('Authorization', org.auth);
      expect(list.status).toBe(200);
      expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([cron, webhook]);
      for (const item of list.body.data) expect(Object.keys(item).sort()).toEqual(TRIGGER_KEYS);
      expect(JSON.stringify(list.body)).not.toMatch(/wh_secret_123|webhook|deactivated/);

      const detail = await t.http.get(`/api/v1/triggers/${webhook}`).set('Authorization', org.auth);
      expect(detail.status).toBe(200);
      expect(detail.body.data).toMatchObject({
        id: webhook,
        agent_id: agentId,
        connector_id: connectorId,
        connector_type: 'zendesk',
        event: 'ticket.created',
        is_active: false,
        conditions: { priority: 'high' },
        settings: { reply: true },
        schedule: null,
      });
      const cronDetail = await t.http.get(`/api/v1/triggers/${cron}`).set('Authorization', org.auth);
      expect(cronDetail.body.data).toMatchObject({ connector_id: null, conditions: null, settings: {} });
      expect(cronDetail.body.data.schedule).toEqual({
        cron_expression: null,
        interval_hours: 6,
        next_run_at: '2026-05-01T06:00:00.000Z',
        last_run_at: '2026-05-01T00:00:00.000Z',
        last_run_status: 'success',
      });
    });

    it('paginates newest first', async () => {
      const org = await createOrg(t.app);
      const all = [];
      for (let i = 0; i < 3; i += 1) all.push(await insertTrigger(t.connection.db, org.orgId));
      const first = await t.http.get('/api/v1/triggers?limit=2').set('Authorization', org.auth);
      const second = await t.http.get(`/api/v1/triggers?limit=2&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`).set('Authorization', org.auth);
      expect([...first.body.data, ...second.body.data].map((x: { id: string }) => x.id)).toEqual([...all].reverse());
      expect(second.body.meta.next_cursor).toBeNull();
    });

    it('ids are trigger_<24 hex> only; other orgs get 404 and see none; needs triggers:read', async () => {
      const orgA = await createOrg(t.app);
      const orgB = await createOrg(t.app);
      const id = await insertTrigger(t.connection.db, orgA.orgId);
      const bare = await t.http.get(`/api/v1/triggers/${id.slice('trigger_'.length)}`).set('Authorization', orgA.auth);
      expect(bare.status).toBe(404);
      const other = await t.http.get(`/api/v1/triggers/${id}`).set('Authorization', orgB.auth);
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('not_found');
      expect((await t.http.get('/api/v1/triggers').set('Authorization', orgB.auth)).body.data).toEqual([]);
      const key = await orgA.key(['chatbots:read']);
      expect((await t.http.get('/api/v1/triggers').set('Authorization', key.auth)).status).toBe(403);
    });
  });
});
