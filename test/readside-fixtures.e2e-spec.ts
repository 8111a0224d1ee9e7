import { eq } from 'drizzle-orm';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUrlSafe } from '../libs/crypto/crypto';
import { newId } from '../libs/ids/ids';
import { FixtureError } from '../src/fixtures/fixture-registry';
import { DEMO_ORG_ID } from '../src/seed/demo-fixture';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { agents } from '../src/agents/agents.table';
import { apiKeys } from '../src/auth/api-keys.table';
import { customTools } from '../src/custom-tools/custom-tools.table';
import { orgs } from '../src/database/orgs.table';
import { sources } from '../src/database/sources.table';
import { members } from '../src/team/team.table';

const CONNECTOR = newId('connector');
const CONNECTOR_B = newId('connector');
import { createTestApp, type TestApp } from './support/test-app';

const demo = (file: string): unknown[] => JSON.parse(readFileSync(join(__dirname, '..', 'src', file), 'utf8')) as unknown[];

function orgDocument(sections: Record<string, unknown>, orgId = newId('org')) {
  const token = `svc_live_${randomUrlSafe(40)}`;
  return {
    token,
    orgId,
    document: {
      orgs: [
        {
          id: orgId,
          name: 'Fixture Org',
          slug: `fixture-${orgId.slice(-10)}`,
          plan: 'pro',
          api_keys: [{ label: 'test', token, scopes: ['conversations:read', 'connectors:read', 'triggers:read', 'chatbots:read'] }],
          ...sections,
        },
      ],
    },
  };
}

describe('Fixture sections: connectors, conversations, triggers, chatbots', () => {
  let t: TestApp;
  let loader: FixtureLoader;
  beforeAll(async () => {
    t = await createTestApp();
    loader = t.app.get(FixtureLoader);
  });
  afterAll(() => t.close());

  it('loads the demo sets and serves them through the API; seeding twice changes nothing', async () => {
    const { token, document } = orgDocument({
      connectors: demo('connectors/connectors.demo.json'),
      conversations: demo('conversations/conversations.demo.json'),
      triggers: demo('triggers/triggers.demo.json'),
      chatbots: demo('chatbots/chatbots.demo.json'),
      // the demo's ids are fixed and belong to the demo organization (on a shared
      // test:pg database, test/demo-fixture.e2e-spec.ts loads them there too)
    }, DEMO_ORG_ID);
    await loader.load(document);
    const auth = `Bearer ${token}`;
    const read = async () => ({
      conversations: (await t.http.get('/api/v1/conversations?limit=100').set('Authorization', auth)).body.data,
      subAgents: (await t.http.get('/api/v1/conversations?source=sub-agent').set('Authorization', auth)).body.data,
      connectors: (await t.http.get('/api/v1/connectors').set('Authorization', auth)).body.data,
      triggers: (await t.http.get('/api/v1/triggers').set('Authorization', auth)).body.data,
      chatbots: (await t.http.get('/api/v1/chatbots').set('Authorization', auth)).body.data,
    });
    const first = await read();
    const demoConversations = demo('conversations/conversations.demo.json') as Array<{ id: string; source: string; message_count: number }>;
    expect(first.conversations).toHaveLength(demoConversations.filter((c) => c.source !== 'sub-agent').length);
    expect(first.subAgents).toHaveLength(1);
    expect(first.connectors).toHaveLength(4);
    expect(first.triggers).toHaveLength(5);
    expect(first.chatbots).toHaveLength(3);

    const withTools = demoConversations.find((c) => c.source === 'autonomous')!;
    const detail = await t.http.get(`/api/v1/conversations/${withTools.id}?include_trigger_payload=true`).set('Authorization', auth);
    expect(detail.body.data.message_count).toBe(withTools.message_count);
    expect(detail.body.data.messages.some((m: { tool_calls: unknown }) => Array.isArray(m.tool_calls))).toBe(true);
    expect(detail.body.data.trigger_payload).toHaveProperty('ticket');
    const ticket = (detail.body.data.trigger_payload as { ticket: { id: number } }).ticket.id;
    const byTicket = await t.http.get(`/api/v1/conversations?ticket_id=${ticket}`).set('Authorization', auth);
    expect(byTicket.body.data.map((c: { id: string }) => c.id)).toEqual([withTools.id]);

    await loader.load({ ...document, orgs: [{ ...document.orgs[0], api_keys: [] }] });
    expect(await read()).toEqual(first);
  });

  it('message_count that disagrees with the messages is an error naming the path, and nothing is written', async () => {
    const conversation = { id: newId('conversation'), source: 'dashboard', message_count: 3, messages: [{ role: 'user', content: 'hi' }] };
    const { document, token } = orgDocument({ conversations: [{ source: 'embed' }, conversation] });
    await expect(loader.load(document)).rejects.toThrow(new FixtureError('orgs[0].conversations[1].message_count', 'is 3 but the conversation has 1 messages'));
    const res = await t.http.get('/api/v1/conversations').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(401);
  });

  it.each([
    [{ conversations: [{ source: 'email' }] }, 'orgs[0].conversations[0].source'],
    [{ conversations: [{ source: 'dashboard', messages: [{ role: 'bot', content: 'x' }] }] }, 'orgs[0].conversations[0].messages[0].role'],
    [{ conversations: [{ source: 'sub-agent', parent_conversation_id: newId('conversation') }] }, 'orgs[0].conversations[0].parent_conversation_id'],
    [{ conversations: [{ source: 'dashboard', conversation_number: 0 }] }, 'orgs[0].conversations[0].conversation_number'],
    [{ conversations: [{ source: 'autonomous', trigger_payload: ['not', 'an', 'object'] }] }, 'orgs[0].conversations[0].trigger_payload'],
    [{ conversations: [{ source: 'sub-agent', conversation_number: 3 }] }, 'orgs[0].conversations[0].conversation_number'],
    [{ conversations: [{ source: 'dashboard', messages: [{ role: 'user', content: 'x', tool_calls: [{ id: 'c1', name: 'n' }] }] }] }, 'orgs[0].conversations[0].messages[0].tool_calls[0].arguments'],
    [{ connectors: [{ type: 'slack', name: 'S', status: 'broken' }] }, 'orgs[0].connectors[0].status'],
    [{ connectors: [{ type: 'slack', name: 'S', tools: [{ name: 't', type: 'admin' }] }] }, 'orgs[0].connectors[0].tools[0].type'],
    [{ triggers: [{ connector_type: 'zendesk', event: 'ticket.created', schedule: { interval_hours: 1 } }] }, 'orgs[0].triggers[0].schedule'],
    [{ triggers: [{ connector_type: 'zendesk', event: 'ticket.created', connector_id: 'zendesk' }] }, 'orgs[0].triggers[0].connector_id'],
    [{ chatbots: [{ name: 'x', allowed_domains: [1] }] }, 'orgs[0].chatbots[0].allowed_domains'],
    // the contract types a connector tool's optional fields without null
    [{ connectors: [{ type: 'slack', name: 'S', tools: [{ name: 't', label: null }] }] }, 'orgs[0].connectors[0].tools[0].label'],
    [{ connectors: [{ type: 'slack', name: 'S', tools: [{ name: 't', disabled: null }] }] }, 'orgs[0].connectors[0].tools[0].disabled'],
    // connector_id is null for custom triggers
    [{ connectors: [{ id: CONNECTOR, type: 'slack', name: 'S' }], triggers: [{ connector_type: 'custom', event: 'svc.custom_trigger', connector_id: CONNECTOR }] }, 'orgs[0].triggers[0].connector_id'],
    [{ connectors: [{ id: CONNECTOR, type: 'slack', name: 'S' }], triggers: [{ connector_type: 'billing', event: 'svc.custom_trigger', connector_id: CONNECTOR }] }, 'orgs[0].triggers[0].connector_id'],
    // a connector source names a connector of the fixture
    [{ connectors: [{ id: CONNECTOR, type: 'zendesk', name: 'Z' }], sources: [{ type: 'connector', name: 'Guide', connector_id: newId('connector') }] }, 'orgs[0].sources[0].connector_id'],
  ])('rejects a bad field naming its path (%#)', async (sections, path) => {
    const { document } = orgDocument(sections);
    await expect(loader.load(document)).rejects.toMatchObject({ name: 'FixtureError', path });
  });

  it('an id owned by another organization is refused and nothing of the fixture is written', async () => {
    const shared = newId('conversation');
    const first = orgDocument({ conversations: [{ id: shared, source: 'dashboard', title: 'Org A secret' }] });
    await loader.load(first.document);
    const second = orgDocument({ connectors: [{ type: 'slack', name: 'B' }], conversations: [{ id: shared, source: 'dashboard', title: 'hijack' }] });
    await expect(loader.load(second.document)).rejects.toThrow(/belongs to another organization/);
    const a = await t.http.get(`/api/v1/conversations/${shared}`).set('Authorization', `Bearer ${first.token}`);
    expect(a.body.data.title).toBe('Org A secret');
    const b = await t.http.get('/api/v1/connectors').set('Authorization', `Bearer ${second.token}`);
    expect(b.status).toBe(401);
  });

  it.each([
    ['connectors', 'connector', (id: string, name: string) => ({ id, type: 'slack', name })],
    ['triggers', 'trigger', (id: string, name: string) => ({ id, connector_type: 'zendesk', event: 'ticket.created', settings: { name } })],
    ['chatbots', 'chatbot', (id: string, name: string) => ({ id, name })],
  ] as const)('a %s id owned by another organization is refused and left as it was', async (section, kind, item) => {
    const shared = newId(kind);
    const first = orgDocument({ [section]: [item(shared, 'Org A')] });
    await loader.load(first.document);
    // the foreign id second in its list: the error names that item's id
    const second = orgDocument({ [section]: [item(newId(kind), 'fresh'), item(shared, 'hijack')] });
    await expect(loader.load(second.document)).rejects.toMatchObject({
      name: 'FixtureError',
      path: `orgs[0].${section}[1].id`,
      message: `orgs[0].${section}[1].id: ${kind} ${shared} belongs to another organization`,
    });
    const a = await t.http.get(`/api/v1/${section}/${shared}`).set('Authorization', `Bearer ${first.token}`);
    expect(a.status).toBe(200);
    expect(JSON.stringify(a.body.data)).toContain('Org A');
    expect(JSON.stringify(a.body.data)).not.toContain('hijack');
  });

  it('derives ticket ids and conversation numbers; sub-agent runs get none', async () => {
    const parent = newId('conversation');
    const { document, token } = orgDocument({
      conversations: [
        { id: parent, source: 'autonomous', metadata: { ticket_id: 88 }, trigger_payload: { ticket: { id: 'ZD-1' } } },
        { source: 'sub-agent', parent_conversation_id: parent },
        { source: 'embed', conversation_number: 5 },
      ],
    });
    await loader.load(document);
    const auth = `Bearer ${token}`;
    for (const ticket of ['88', 'ZD-1']) {
      const res = await t.http.get(`/api/v1/conversations?ticket_id=${ticket}`).set('Authorization', auth);
      expect(res.body.data.map((c: { id: string }) => c.id)).toEqual([parent]);
    }
    const all = await t.http.get('/api/v1/conversations').set('Authorization', auth);
    expect(all.body.data.map((c: { conversation_number: number }) => c.conversation_number).sort()).toEqual([5, 6]);
    const runs = await t.http.get('/api/v1/conversations?source=sub-agent').set('Authorization', auth);
    expect(runs.body.data[0]).toMatchObject({ conversation_number: null, parent_conversation_id: parent, autonomous: false });
    expect(all.body.data.find((c: { id: string }) => c.id === parent)).toMatchObject({ autonomous: true });
  });

  describe('agents, members, sources, custom tools and api keys refuse an id of another organization and leave its row as it was', () => {
    it.each([
      ['agents', agents, (id: string, name: string) => ({ id, handle: `h${id.slice(-8)}`, name, instructions: 'i' })],
      ['members', members, (id: string, name: string) => ({ id, email: `${id}@example.com`, role: 'member', name })],
      ['sources', sources, (id: string, name: string) => ({ id, type: 'website', name })],
      ['custom_tools', customTools, (id: string, name: string) => ({ id, label: name, description: 'd', method: 'GET', url: 'https://example.com/x' })],
      ['api_keys', apiKeys, (id: string, name: string) => ({ id, label: name, scopes: ['org:read'] })],
    ] as const)('%s', async (section, table, item) => {
      const kind = { agents: 'agent', members: 'member', sources: 'source', custom_tools: 'customTool', api_keys: 'key' } as const;
      const noun = { agents: 'agent', members: 'member', sources: 'source', custom_tools: 'custom tool', api_keys: 'key' } as const;
      const shared = newId(kind[section]);
      const first = orgDocument({ [section]: [item(shared, 'Org A')] });
      await loader.load(first.document);
      const second = orgDocument({ [section]: [item(newId(kind[section]), 'fresh'), item(shared, 'hijack')] });
      // the whole load is refused (one transaction), like the read-side sections above, naming the item's id
      await expect(loader.load(second.document)).rejects.toMatchObject({
        path: `orgs[0].${section}[1].id`,
        message: `orgs[0].${section}[1].id: ${noun[section]} ${shared} belongs to another organization`,
      });
      expect(await t.connection.db.select().from(orgs).where(eq(orgs.id, second.orgId))).toHaveLength(0);
      const rows = await t.connection.db.select().from(table).where(eq(table.id, shared));
      expect(rows).toHaveLength(1);
      expect(rows[0].orgId).toBe(first.orgId);
      expect(JSON.stringify(rows[0])).toContain('Org A');
      expect(JSON.stringify(rows[0])).not.toContain('hijack');
    });
  });

  describe('organizations are matched by id, or by slug when the fixture gives no id', () => {
    it('a fixture without organization ids can be seeded twice: the second load updates the same organization', async () => {
      const slug = `noid-${newId('org').slice(-10)}`;
      const document = (name: string) => ({ orgs: [{ name, slug, plan: 'pro', connectors: [{ id: CONNECTOR_B, type: 'slack', name }] }] });
      const first = await loader.load(document('First'));
      const second = await loader.load(document('Second'));
      expect(second.orgs[0].id).toBe(first.orgs[0].id);
      const rows = await t.connection.db.select().from(orgs).where(eq(orgs.slug, slug));
      expect(rows.map((row) => [row.id, row.name])).toEqual([[first.orgs[0].id, 'Second']]);
    });

    it('an organization id with the slug of another organization is refused naming orgs[i].slug, and nothing is written', async () => {
      const taken = orgDocument({});
      await loader.load(taken.document);
      const slug = taken.document.orgs[0].slug;
      const clash = orgDocument({ connectors: [{ type: 'slack', name: 'never written' }] });
      const second = { orgs: [orgDocument({}).document.orgs[0], { ...clash.document.orgs[0], slug }] };
      await expect(loader.load(second)).rejects.toMatchObject({ name: 'FixtureError', path: 'orgs[1].slug' });
      for (const org of second.orgs) {
        if (org.id === taken.orgId) continue;
        expect(await t.connection.db.select().from(orgs).where(eq(orgs.id, org.id))).toHaveLength(0);
      }
    });
  });
  describe('text the database would change is refused, as the API refuses it', () => {
    const conversation = (title: string) => ({ id: newId('conversation'), title, source: 'api', agent_id: null, messages: [] });

    it.each([
      ['U+0000', 'a\u0000b'],
      ['an unpaired surrogate', 'a\ud800b'],
    ])('%s in a field: FixtureError naming its path, nothing written', async (_name, title) => {
      const { orgId, document } = orgDocument({ conversations: [conversation('fine'), conversation(title)] });
      await expect(loader.load(document)).rejects.toMatchObject({ name: 'FixtureError', path: 'orgs[0].conversations[1].title' });
      expect(await t.connection.db.select().from(orgs).where(eq(orgs.id, orgId))).toHaveLength(0);
    });

    it('invalid UTF-8 bytes in a fixture file: FixtureError naming the field, not U+FFFD stored', async () => {
      const { orgId, document } = orgDocument({ conversations: [conversation('TITLE')] });
      const file = join(mkdtempSync(join(tmpdir(), 'fixture-')), 'bad.json');
      const bytes = Buffer.from(JSON.stringify(document));
      const at = bytes.indexOf('TITLE');
      bytes[at] = 0xff; // not UTF-8 in any position
      writeFileSync(file, bytes);
      await expect(loader.loadFile(file)).rejects.toMatchObject({ name: 'FixtureError', path: 'orgs[0].conversations[0].title' });
      expect(await t.connection.db.select().from(orgs).where(eq(orgs.id, orgId))).toHaveLength(0);
    });
  });
});
