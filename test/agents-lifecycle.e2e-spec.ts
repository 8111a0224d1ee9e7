import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from '../libs/ids/ids';
import { FixtureError } from '../src/fixtures/fixture-registry';
import { DEMO_ORG_ID } from '../src/seed/demo-fixture';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { AgentsTrashService } from '../src/agents/agents-trash.service';
import { OrgsService } from '../src/orgs/orgs.service';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import {
  insertChatbot,
  insertConnector,
  insertTrigger,
  readAgentRow,
  readChatbot,
  readTrigger,
  setAgentDeletedAt,
  setConnectorStatus,
  setSubAgents,
} from './support/agent-rows';

let t: TestApp;
let counter = 0;
const DAY = 24 * 60 * 60 * 1000;

async function createAgent(org: TestOrg, body: Record<string, unknown> = {}) {
  const res = await t.http
    .post('/api/v1/agents')
    .set('Authorization', org.auth)
    .send({ handle: `life${Date.now().toString(36)}${++counter}`, name: 'Agent', instructions: 'x', ...body });
  expect(res.status).toBe(201);
  return res.body.data as Record<string, unknown> & { id: string; handle: string };
}

const patch = (org: TestOrg, id: string, body: Record<string, unknown>) => t.http.patch(`/api/v1/agents/${id}`).set('Authorization', org.auth).send(body);

/** An agent with what the cascades act on: two live triggers (one with a webhook), one switched off by a person, two chatbots (one paused by a person). */
async function agentWithSurroundings(org: TestOrg, body: Record<string, unknown> = {}) {
  const agent = await createAgent(org, body);
  return {
    agent,
    webhookTrigger: await insertTrigger(t, org.orgId, agent.id, { webhookId: 'wh_123', webhookStatus: 'active' }),
    cronTrigger: await insertTrigger(t, org.orgId, agent.id, { connectorType: 'schedule', event: 'cron.scheduled' }),
    offTrigger: await insertTrigger(t, org.orgId, agent.id, { isActive: false, webhookId: 'wh_off', webhookStatus: 'paused' }),
    chatbot: await insertChatbot(t, org.orgId, agent.id),
    pausedChatbot: await insertChatbot(t, org.orgId, agent.id, { isActive: false }),
  };
}

beforeAll(async () => {
  t = await createTestApp();
});

afterAll(async () => {
  await t.close();
});

describe('active → inactive: triggers deactivated, chatbots paused, webhooks toggled in place', () => {
  it('switches off what was on, records why, keeps webhook ids, leaves other agents alone', async () => {
    const org = await createOrg(t.app);
    const s = await agentWithSurroundings(org);
    const neighbour = await createAgent(org);
    const neighbourTrigger = await insertTrigger(t, org.orgId, neighbour.id, { webhookId: 'wh_n', webhookStatus: 'active' });
    const neighbourChatbot = await insertChatbot(t, org.orgId, neighbour.id);

    const res = await patch(org, s.agent.id, { is_active: false });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ is_active: false, deactivated_reason: 'manual' });
    expect(res.body.data.deactivated_at).not.toBeNull();

    const webhook = await readTrigger(t, s.webhookTrigger.id);
    expect(webhook).toMatchObject({ isActive: false, deactivatedReason: 'agent_deactivated', webhookId: 'wh_123', webhookStatus: 'paused' });
    expect(webhook!.deactivatedAt).toBeInstanceOf(Date);
    expect(await readTrigger(t, s.cronTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deactivated', webhookStatus: null });
    expect(await readTrigger(t, s.offTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: null, deactivatedAt: null, webhookStatus: 'paused' });
    expect(await readChatbot(t, s.chatbot.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deactivated' });
    expect(await readChatbot(t, s.pausedChatbot.id)).toMatchObject({ isActive: false, deactivatedReason: null });

    expect(await readTrigger(t, neighbourTrigger.id)).toMatchObject({ isActive: true, webhookStatus: 'active', deactivatedReason: null });
    expect(await readChatbot(t, neighbourChatbot.id)).toMatchObject({ isActive: true, deactivatedReason: null });
  });

  it('an explicit deactivated_reason in the same PATCH is kept', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    const res = await patch(org, agent.id, { is_active: false, deactivated_reason: 'billing review' });
    expect(res.body.data).toMatchObject({ is_active: false, deactivated_reason: 'billing review' });
  });

  it('deactivating an inactive agent changes no trigger', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org);
    await patch(org, agent.id, { is_active: false }).expect(200);
    const later = await insertTrigger(t, org.orgId, agent.id);
    await patch(org, agent.id, { is_active: false }).expect(200);
    expect(await readTrigger(t, later.id)).toMatchObject({ isActive: true, deactivatedReason: null });
  });

  it('deactivation is allowed while a connector is in auth_failed', async () => {
    const org = await createOrg(t.app);
    const broken = await insertConnector(t, org.orgId, { status: 'auth_failed' });
    const agent = await createAgent(org, { connectors: [broken.id] });
    await patch(org, agent.id, { is_active: false }).expect(200);
  });
});

describe('inactive → active restores exactly what the cascade changed', () => {
  it('reactivates cascaded triggers and chatbots; a trigger switched off on its own stays off', async () => {
    const org = await createOrg(t.app);
    const s = await agentWithSurroundings(org);
    await patch(org, s.agent.id, { is_active: false }).expect(200);
    const res = await patch(org, s.agent.id, { is_active: true });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ is_active: true, deactivated_reason: null, deactivated_at: null });

    expect(await readTrigger(t, s.webhookTrigger.id)).toMatchObject({
      isActive: true,
      deactivatedReason: null,
      deactivatedAt: null,
      webhookId: 'wh_123',
      webhookStatus: 'active',
    });
    expect(await readTrigger(t, s.cronTrigger.id)).toMatchObject({ isActive: true, deactivatedReason: null });
    expect(await readTrigger(t, s.offTrigger.id)).toMatchObject({ isActive: false, webhookStatus: 'paused' });
    expect(await readChatbot(t, s.chatbot.id)).toMatchObject({ isActive: true, deactivatedReason: null });
    expect(await readChatbot(t, s.pausedChatbot.id)).toMatchObject({ isActive: false });
  });

  it.each([
    ['connectors', (id: string) => ({ connectors: [id] })],
    ['tools[].connector_id', (id: string) => ({ tools: [{ name: 'zendesk_get_ticket', connector_id: id }] })],
  ])('is refused with 422 naming the connector when one in %s is auth_failed, and nothing changes', async (_where, refs) => {
    const org = await createOrg(t.app);
    const healthy = await insertConnector(t, org.orgId, { name: 'Slack' });
    const broken = await insertConnector(t, org.orgId, { name: 'Zendesk EU' });
    const s = await agentWithSurroundings(org, refs(broken.id));
    await patch(org, s.agent.id, { is_active: false, connectors: [healthy.id, ...(s.agent.connectors as string[])] }).expect(200);
    // the connector fails while the agent is off
    await setConnectorStatus(t, broken.id, 'auth_failed');
    const before = await t.http.get(`/api/v1/agents/${s.agent.id}`).set('Authorization', org.auth);

    const res = await patch(org, s.agent.id, { is_active: true, name: 'Renamed' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.message).toContain(broken.id);
    expect(res.body.error.message).toContain('auth_failed');
    expect(res.body.error.details.connector_ids).toEqual([broken.id]);

    const after = await t.http.get(`/api/v1/agents/${s.agent.id}`).set('Authorization', org.auth);
    expect(after.body.data).toEqual(before.body.data);
    expect(await readTrigger(t, s.webhookTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deactivated', webhookStatus: 'paused' });
    expect(await readChatbot(t, s.chatbot.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deactivated' });
  });

  it('succeeds once the failed connector is unassigned in the same PATCH', async () => {
    const org = await createOrg(t.app);
    const broken = await insertConnector(t, org.orgId, { status: 'auth_failed' });
    const agent = await createAgent(org, { connectors: [broken.id] });
    await patch(org, agent.id, { is_active: false }).expect(200);
    await patch(org, agent.id, { is_active: true }).expect(422);
    const res = await patch(org, agent.id, { is_active: true, connectors: [] });
    expect(res.status).toBe(200);
    expect(res.body.data.is_active).toBe(true);
  });

  it('a token_expired connector does not block activation', async () => {
    const org = await createOrg(t.app);
    const expired = await insertConnector(t, org.orgId, { status: 'token_expired' });
    const agent = await createAgent(org, { connectors: [expired.id] });
    await patch(org, agent.id, { is_active: false }).expect(200);
    await patch(org, agent.id, { is_active: true }).expect(200);
  });
});

describe('concurrent deactivate/activate of one agent', () => {
  it('leaves triggers and chatbots consistent with the final agent state', async () => {
    const org = await createOrg(t.app);
    const s = await agentWithSurroundings(org);
    const requests = Array.from({ length: 10 }, (_v, i) => patch(org, s.agent.id, { is_active: i % 2 === 1 }));
    const results = await Promise.all(requests);
    expect(results.map((res) => res.status)).toEqual(Array(10).fill(200));
    const final = (await t.http.get(`/api/v1/agents/${s.agent.id}`).set('Authorization', org.auth)).body.data.is_active as boolean;
    const webhook = await readTrigger(t, s.webhookTrigger.id);
    const cron = await readTrigger(t, s.cronTrigger.id);
    const chatbot = await readChatbot(t, s.chatbot.id);
    expect(webhook).toMatchObject({ isActive: final, webhookStatus: final ? 'active' : 'paused', webhookId: 'wh_123', deactivatedReason: final ? null : 'agent_deactivated' });
    expect(cron!.isActive).toBe(final);
    expect(chatbot).toMatchObject({ isActive: final, deactivatedReason: final ? null : 'agent_deactivated' });
    expect(await readTrigger(t, s.offTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: null });
    expect(await readChatbot(t, s.pausedChatbot.id)).toMatchObject({ isActive: false, deactivatedReason: null });
  });
});

describe('DELETE → soft-deleted: triggers deactivated, webhooks torn down, chatbots paused', () => {
  it('moves the agent to the trash with its cascade, then 404s it everywhere', async () => {
    const org = await createOrg(t.app);
    const s = await agentWithSurroundings(org);
    const res = await t.http.delete(`/api/v1/agents/${s.agent.id}`).set('Authorization', org.auth);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: s.agent.id, deleted: true });

    const row = await readAgentRow(t, org.orgId, s.agent.id);
    expect(row!.deletedAt).toBeInstanceOf(Date);
    expect(await readTrigger(t, s.webhookTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deleted', webhookStatus: 'torn_down', webhookId: null });
    expect(await readTrigger(t, s.cronTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deleted', webhookStatus: null });
    expect(await readTrigger(t, s.offTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: null, webhookStatus: 'torn_down', webhookId: null });
    expect(await readChatbot(t, s.chatbot.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deleted' });

    for (const again of [
      await t.http.delete(`/api/v1/agents/${s.agent.id}`).set('Authorization', org.auth),
      await t.http.get(`/api/v1/agents/${s.agent.id}`).set('Authorization', org.auth),
      await patch(org, s.agent.id, { name: 'zombie' }),
    ]) {
      expect(again.status).toBe(404);
      expect(again.body.error.code).toBe('agent_not_found');
    }
  });

  it('deleting an inactive agent tears down its paused webhooks and keeps the deactivation reasons', async () => {
    const org = await createOrg(t.app);
    const s = await agentWithSurroundings(org);
    await patch(org, s.agent.id, { is_active: false }).expect(200);
    await t.http.delete(`/api/v1/agents/${s.agent.id}`).set('Authorization', org.auth).expect(200);
    expect(await readTrigger(t, s.webhookTrigger.id)).toMatchObject({ isActive: false, deactivatedReason: 'agent_deactivated', webhookStatus: 'torn_down', webhookId: null });
  });

  it('frees the handle for a new agent', async () => {
    const org = await createOrg(t.app);
    const agent = await createAgent(org, { handle: 'Recycled' });
    await t.http.delete(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).expect(200);
    const again = await createAgent(org, { handle: 'recycled' });
    expect(again.id).not.toBe(agent.id);
  });
});

describe('trash purge: agents soft-deleted more than 30 days ago are hard-deleted', () => {
  // The purge sweeps every organization, and on PostgreSQL other test files share the database, some
  // loading fixtures with agents trashed long ago. Purging as of a date before any of them (these tests'
  // own trash is dated relative to it) leaves theirs alone, so the counts here are these tests' own.
  const PURGE_NOW = new Date('2001-06-01T00:00:00.000Z');
  async function trashed(org: TestOrg, daysAgo: number, now: Date) {
    const agent = await createAgent(org);
    const trigger = await insertTrigger(t, org.orgId, agent.id, { webhookId: 'wh', webhookStatus: 'active' });
    const chatbot = await insertChatbot(t, org.orgId, agent.id);
    await t.http.delete(`/api/v1/agents/${agent.id}`).set('Authorization', org.auth).expect(200);
    await setAgentDeletedAt(t, agent.id, new Date(now.getTime() - daysAgo * DAY));
    return { agent, trigger, chatbot };
  }

  it('purges the 31-day-old agent with its triggers and chatbots, keeps the 29-day-old one, and cleans sub_agents', async () => {
    const now = PURGE_NOW;
    const org = await createOrg(t.app);
    const old = await trashed(org, 31, now);
    const young = await trashed(org, 29, now);
    const keeper = await createAgent(org);
    const parent = await createAgent(org, { sub_agents: [keeper.id] });
    // sub_agents that point at trashed agents (listed before they were deleted)
    await setSubAgents(t, parent.id, [keeper.id, old.agent.id, young.agent.id]);
    const liveTrigger = await insertTrigger(t, org.orgId, keeper.id);
    const orphanTrigger = await insertTrigger(t, org.orgId, null, { event: 'svc.custom_trigger' });

    const result = await t.app.get(AgentsTrashService).purgeExpiredTrash(now);
    expect(result).toMatchObject({ deleted_before: new Date(now.getTime() - 30 * DAY).toISOString(), skipped: false });
    expect(result.agents).toBe(1);

    expect(await readAgentRow(t, org.orgId, old.agent.id)).toBeUndefined();
    expect(await readTrigger(t, old.trigger.id)).toBeUndefined();
    expect(await readChatbot(t, old.chatbot.id)).toBeUndefined();

    expect(await readAgentRow(t, org.orgId, young.agent.id)).toBeDefined();
    expect(await readTrigger(t, young.trigger.id)).toBeDefined();
    expect(await readChatbot(t, young.chatbot.id)).toBeDefined();
    expect(await readTrigger(t, liveTrigger.id)).toBeDefined();
    expect(await readTrigger(t, orphanTrigger.id)).toBeDefined();

    const parentAfter = await t.http.get(`/api/v1/agents/${parent.id}`).set('Authorization', org.auth);
    expect(parentAfter.body.data).toMatchObject({ sub_agents: [keeper.id, young.agent.id], sub_agents_count: 2 });
    const gone = await t.http.get(`/api/v1/agents/${old.agent.id}`).set('Authorization', org.auth);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('agent_not_found');

    // a run as if two days later takes the 29-day-old one (now 31 days old)
    const later = await t.app.get(AgentsTrashService).purgeExpiredTrash(new Date(now.getTime() + 2 * DAY));
    expect(later.agents).toBe(1);
    expect(await readAgentRow(t, org.orgId, young.agent.id)).toBeUndefined();
    const parentFinal = await t.http.get(`/api/v1/agents/${parent.id}`).set('Authorization', org.auth);
    expect(parentFinal.body.data.sub_agents).toEqual([keeper.id]);
  });

  it('works in batches and is idempotent', async () => {
    const now = PURGE_NOW;
    const org = await createOrg(t.app);
    const old = [];
    for (let i = 0; i < 5; i++) old.push(await trashed(org, 40, now));
    const service = t.app.get(AgentsTrashService);
    const first = await service.purgeExpiredTrash(now, 2);
    expect(first.agents).toBe(5);
    expect(first.batches).toBe(3);
    for (const { agent } of old) expect(await readAgentRow(t, org.orgId, agent.id)).toBeUndefined();
    const second = await service.purgeExpiredTrash(now, 2);
    expect(second).toMatchObject({ agents: 0, triggers: 0, chatbots: 0, batches: 0 });
  });

  it('two purges running at once delete everything exactly once and never fail', async () => {
    const now = PURGE_NOW;
    const org = await createOrg(t.app);
    const old = [];
    for (let i = 0; i < 4; i++) old.push(await trashed(org, 45, now));
    const service = t.app.get(AgentsTrashService);
    const [a, b] = await Promise.all([service.purgeExpiredTrash(now, 1), service.purgeExpiredTrash(now, 1)]);
    expect(a.agents + b.agents).toBe(4);
    for (const { agent } of old) expect(await readAgentRow(t, org.orgId, agent.id)).toBeUndefined();
  });
});

describe('the trash purge job is scheduled from config.trashPurgeCron', () => {
  it('runs on the configured schedule when jobs are enabled', async () => {
    const scheduled = await createTestApp({ jobsEnabled: true, trashPurgeCron: '* * * * * *' });
    try {
      const { SchedulerRegistry } = await import('@nestjs/schedule');
      expect(scheduled.app.get(SchedulerRegistry).doesExist('cron', 'agents-trash-purge')).toBe(true);
      const org = await createOrg(scheduled.app);
      const res = await scheduled.http.post('/api/v1/agents').set('Authorization', org.auth).send({ handle: 'cronVictim', name: 'C', instructions: 'x' });
      await scheduled.http.delete(`/api/v1/agents/${res.body.data.id}`).set('Authorization', org.auth).expect(200);
      await setAgentDeletedAt(scheduled, res.body.data.id, new Date(Date.now() - 31 * DAY));
      // a job every second; the bound only stops the wait (a loaded machine delays every run)
      const deadline = Date.now() + 30_000;
      let row = await readAgentRow(scheduled, org.orgId, res.body.data.id);
      while (row && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        row = await readAgentRow(scheduled, org.orgId, res.body.data.id);
      }
      expect(row).toBeUndefined();
    } finally {
      await scheduled.close();
    }
  });

  it('is not registered when the cron is disabled (null)', async () => {
    const disabled = await createTestApp({ jobsEnabled: true, trashPurgeCron: null });
    try {
      const { SchedulerRegistry } = await import('@nestjs/schedule');
      expect(disabled.app.get(SchedulerRegistry).doesExist('cron', 'agents-trash-purge')).toBe(false);
    } finally {
      await disabled.close();
    }
  });
});

describe('fixture section agents', () => {
  const orgDoc = (agents: unknown[], extra: Record<string, unknown> = {}) => ({
    orgs: [{ id: newId('org'), name: `Fixture ${++counter}`, slug: `fixture-${Date.now().toString(36)}-${counter}`, plan: 'pro', status: 'active', agents, ...extra }],
  });

  it('loads live and soft-deleted agents; the API shows only the live ones, with derived counts', async () => {
    const live = newId('agent');
    const sub = newId('agent');
    const trashedId = newId('agent');
    const token = `svc_live_${'f'.repeat(20)}${Date.now().toString(36)}${'0'.repeat(12)}`;
    const doc = orgDoc([
      { id: live, handle: 'fixtureLive', name: 'Live', instructions: 'x', sub_agents: [sub], sub_agents_count: 1, tools: [{ name: 'search_knowledge' }], tools_count: 1 },
      { id: sub, handle: 'fixtureSub', name: 'Sub', instructions: 'x', is_active: false, deactivated_reason: 'manual' },
      { id: trashedId, handle: 'fixtureLive', name: 'Old', instructions: 'x', deleted_at: '2026-01-01T00:00:00.000Z' },
    ], { api_keys: [{ token, scopes: ['agents:read'] }] });
    const loader = t.app.get(FixtureLoader);
    await loader.load(doc);
    await loader.load(doc); // upserted by id: safe twice
    const orgId = doc.orgs[0].id;
    const list = await t.http.get('/api/v1/agents').set('Authorization', `Bearer ${token}`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((agent: { id: string }) => agent.id).sort()).toEqual([live, sub].sort());
    expect(list.body.data.find((agent: { id: string }) => agent.id === live)).toMatchObject({ tools_count: 1, sub_agents_count: 1 });
    const hidden = await t.http.get(`/api/v1/agents/${trashedId}`).set('Authorization', `Bearer ${token}`);
    expect(hidden.status).toBe(404);
    const row = await readAgentRow(t, orgId, trashedId);
    expect(row!.deletedAt!.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    const liveRow = await readAgentRow(t, orgId, live);
    expect(liveRow).toMatchObject({ subAgents: [sub], tools: [{ name: 'search_knowledge', connector_id: null }] });
    expect(await readAgentRow(t, orgId, sub)).toMatchObject({ isActive: false, deactivatedReason: 'manual' });
  });

  it.each([
    ['a bad handle', [{ handle: 'bad-handle', name: 'x', instructions: 'x' }], 'orgs[0].agents[0].handle'],
    ['a duplicate live handle', [{ handle: 'Same', name: 'x', instructions: 'x' }, { handle: 'same', name: 'y', instructions: 'x' }], 'orgs[0].agents[1].handle'],
    ['a tools_count that disagrees', [{ handle: 'a', name: 'x', instructions: 'x', tools_count: 2 }], 'orgs[0].agents[0].tools_count'],
    ['a sub_agents_count that disagrees', [{ handle: 'a', name: 'x', instructions: 'x', sub_agents_count: 1 }], 'orgs[0].agents[0].sub_agents_count'],
    ['an unknown sub-agent', [{ handle: 'a', name: 'x', instructions: 'x', sub_agents: ['agent_0123456789abcdef01234567'] }], 'orgs[0].agents[0].sub_agents[0]'],
    ['an unknown connector', [{ handle: 'a', name: 'x', instructions: 'x', connectors: ['connector_0123456789abcdef01234567'] }], 'orgs[0].agents[0].connectors[0]'],
    ['missing instructions', [{ handle: 'a', name: 'x' }], 'orgs[0].agents[0].instructions'],
    // the API's input bounds hold for fixtures too (docs/decisions.md, "Input bounds")
    ['a description over the API bound', [{ handle: 'a', name: 'x', instructions: 'x', description: 'd'.repeat(2_001) }], 'orgs[0].agents[0].description'],
    ['more sub-agents than the API accepts', [{ handle: 'a', name: 'x', instructions: 'x', sub_agents: Array.from({ length: 101 }, (_, i) => `agent_${String(i).padStart(24, '0')}`) }], 'orgs[0].agents[0].sub_agents'],
    ['a bad deleted_at', [{ handle: 'a', name: 'x', instructions: 'x', deleted_at: 'last week' }], 'orgs[0].agents[0].deleted_at'],
  ])('rejects %s, naming the path, and writes nothing', async (_case, agents, path) => {
    const doc = orgDoc(agents);
    let error: unknown;
    try {
      await t.app.get(FixtureLoader).load(doc);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(FixtureError);
    expect((error as FixtureError).path).toBe(path);
    expect(await t.app.get(OrgsService).findRow(doc.orgs[0].id)).toBeNull();
  });

  it('the demo agents (src/agents/agents.demo.json) are a valid agents section', async () => {
    const demo = JSON.parse(readFileSync(join(__dirname, '..', 'src', 'agents', 'agents.demo.json'), 'utf8')) as unknown[];
    expect(demo.length).toBeGreaterThanOrEqual(3);
    const doc = orgDoc(demo);
    // the demo's ids are fixed and belong to the demo organization (on a shared
    // test:pg database, test/demo-fixture.e2e-spec.ts loads them there too)
    doc.orgs[0].id = DEMO_ORG_ID;
    await t.app.get(FixtureLoader).load(doc);
  });
});
