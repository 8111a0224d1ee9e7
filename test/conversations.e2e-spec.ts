import { and, desc, eq, ilike } from 'drizzle-orm';
import type { Response } from 'supertest';
import { newId } from '../libs/ids/ids';
import { createOrg, type TestOrg } from './support/factories';
import { insertAgent, insertConversation } from './support/readside-rows';
import { createTestApp, type TestApp } from './support/test-app';
import { ConversationsRepository, Q_PROBE_ROWS } from '../src/conversations/conversations.repository';
import type { ConversationFilters } from '../src/conversations/conversations.filters';
import { conversations } from '../src/conversations/conversations.table';

const SUMMARY_KEYS = [
  'agent_id',
  'autonomous',
  'conversation_number',
  'created_at',
  'credits_used',
  'id',
  'is_onboarding',
  'is_simulation',
  'last_message_at',
  'message_count',
  'metadata',
  'model',
  'parent_conversation_id',
  'source',
  'title',
  'updated_at',
].sort();
const MESSAGE_KEYS = ['connector_type', 'content', 'created_at', 'id', 'model', 'role', 'tool_call_id', 'tool_calls', 'tool_name'].sort();

describe('Conversations', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const list = (org: TestOrg, query: string) => t.http.get(`/api/v1/conversations${query}`).set('Authorization', org.auth);
  const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((item) => item.id);
  /** The ids of up to `max` pages of `query`, following the cursor. */
  const pagesOf = async (org: TestOrg, query: string, limit: number, max: number) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < max; page += 1) {
      const res = await list(org, `?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...ids(res));
      cursor = res.body.meta.next_cursor;
      if (!cursor) break;
    }
    return seen;
  };

  /** Inserts one row that must match and one that must not, then checks the filter keeps exactly the first. */
  async function expectFilter(query: string, matching: Parameters<typeof insertConversation>[2], other: Parameters<typeof insertConversation>[2]) {
    const org = await createOrg(t.app);
    const hit = await insertConversation(t.connection.db, org.orgId, matching);
    await insertConversation(t.connection.db, org.orgId, other);
    const res = await list(org, query);
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual([hit]);
  }

  describe('GET /conversations: ConversationSummary list, newest first', () => {
    it('returns the exact summary shape with message_count null and no internal fields', async () => {
      const org = await createOrg(t.app);
      const agentId = await insertAgent(t.connection.db, org.orgId);
      const older = await insertConversation(t.connection.db, org.orgId, { title: null, conversationNumber: 1 });
      const newer = await insertConversation(
        t.connection.db,
        org.orgId,
        {
          title: 'Refund request',
          agentId,
          model: 'gpt-4o',
          source: 'autonomous',
          autonomous: true,
          conversationNumber: 2,
          creditsUsed: 7,
          metadata: { ticketId: 42 },
          triggerPayload: { ticket: { id: 42, requester: 'jane@example.com' } },
          lastMessageAt: new Date('2026-01-02T03:04:05Z'),
        },
        [{ role: 'user', content: 'hi' }],
      );
      const res = await list(org, '');
      expect(res.status).toBe(200);
      expect(ids(res)).toEqual([newer, older]);
      expect(res.body.meta.next_cursor).toBeNull();
      for (const item of res.body.data) expect(Object.keys(item).sort()).toEqual(SUMMARY_KEYS);
      expect(res.body.data[0]).toMatchObject({
        id: newer,
        title: 'Refund request',
        source: 'autonomous',
        agent_id: agentId,
        model: 'gpt-4o',
        autonomous: true,
        is_onboarding: false,
        is_simulation: false,
        conversation_number: 2,
        parent_conversation_id: null,
        credits_used: 7,
        metadata: { ticketId: 42 },
        message_count: null,
        last_message_at: '2026-01-02T03:04:05.000Z',
      });
      expect(res.body.data[1]).toMatchObject({ title: null, agent_id: null, model: null, metadata: null, last_message_at: null, message_count: null });
      expect(JSON.stringify(res.body)).not.toContain('jane@example.com');
    });

    it('needs the conversations:read scope', async () => {
      const org = await createOrg(t.app);
      const key = await org.key(['agents:read']);
      const res = await t.http.get('/api/v1/conversations').set('Authorization', key.auth);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('insufficient_scope');
    });
  });

  describe('filters: each keeps the matching row and drops the other', () => {
    const a = newId('agent');
    const b = newId('agent');
    it('agent_id (prefixed)', () => expectFilter(`?agent_id=${a}`, { agentId: a }, { agentId: b }));
    it('agent_id (bare 24-hex)', () => expectFilter(`?agent_id=${a.slice('agent_'.length)}`, { agentId: a }, { agentId: b }));
    it('source', () => expectFilter('?source=embed', { source: 'embed' }, { source: 'dashboard' }));
    it('model', () => expectFilter('?model=gpt-4o', { model: 'gpt-4o' }, { model: 'gpt-4o-mini' }));
    it('conversation_number', () => expectFilter('?conversation_number=7', { conversationNumber: 7 }, { conversationNumber: 8 }));
    it('created_after', () =>
      expectFilter('?created_after=2026-03-01T00:00:00Z', { createdAt: new Date('2026-03-02T00:00:00Z') }, { createdAt: new Date('2026-02-28T00:00:00Z') }));
    it('created_before', () =>
      expectFilter('?created_before=2026-03-01T00:00:00Z', { createdAt: new Date('2026-02-28T00:00:00Z') }, { createdAt: new Date('2026-03-02T00:00:00Z') }));
    it('last_message_after', () =>
      expectFilter('?last_message_after=2026-03-01T00:00:00Z', { lastMessageAt: new Date('2026-03-01T00:00:00Z') }, { lastMessageAt: new Date('2026-02-28T23:59:59Z') }));
    it('since (alias of last_message_after)', () =>
      expectFilter('?since=2026-03-01T00:00:00%2B02:00', { lastMessageAt: new Date('2026-03-01T00:00:00Z') }, { lastMessageAt: new Date('2026-02-28T21:00:00Z') }));
    it('last_message_before', () =>
      expectFilter('?last_message_before=2026-03-01T00:00:00Z', { lastMessageAt: new Date('2026-02-28T00:00:00Z') }, { lastMessageAt: new Date('2026-03-02T00:00:00Z') }));
    it('last_message_after drops conversations without messages', () =>
      expectFilter('?last_message_after=2000-01-01T00:00:00Z', { lastMessageAt: new Date('2026-03-01T00:00:00Z') }, { lastMessageAt: null }));
    it('ticket_id matches metadata.ticketId stored as a number', () => expectFilter('?ticket_id=123', { metadata: { ticketId: 123 } }, { metadata: { ticketId: 1234 } }));
    it('ticket_id matches metadata.ticket_id stored as a string', () => expectFilter('?ticket_id=ZD-9', { metadata: { ticket_id: 'ZD-9' } }, { metadata: { ticket_id: 'ZD-99' } }));
    it('ticket_id matches trigger_payload.ticket.id', () =>
      expectFilter('?ticket_id=555', { triggerPayload: { ticket: { id: 555 } } }, { triggerPayload: { ticket: { id: 556 } } }));
    it('ticket_id does not match other metadata keys', () => expectFilter('?ticket_id=77', { metadata: { ticketId: '77' } }, { metadata: { orderId: '77' } }));
    it('metadata[KEY] exact match', () => expectFilter('?metadata[channel]=email', { metadata: { channel: 'email' } }, { metadata: { channel: 'emails' } }));
    it('metadata[KEY] matches the same scalar stored as a number', () => expectFilter('?metadata[priority]=2', { metadata: { priority: 2 } }, { metadata: { priority: 3 } }));
    it('several metadata keys are AND-ed', () =>
      expectFilter('?metadata[channel]=email&metadata[lang]=de', { metadata: { channel: 'email', lang: 'de' } }, { metadata: { channel: 'email', lang: 'en' } }));
    it('q is a case-insensitive substring of the title', () => expectFilter('?q=rEfUnD', { title: 'Customer wants a REFUND now' }, { title: 'Shipping question' }));
    it('q treats % literally', () => expectFilter('?q=100%25', { title: 'Discount of 100% off' }, { title: 'Discount of 1000 off' }));
    it('q treats _ literally', () => expectFilter('?q=a_b', { title: 'field a_b broken' }, { title: 'field axb broken' }));
    it('q treats backslash and regex characters literally', () => expectFilter('?q=%5C.*%5B', { title: 'path C:\\.*[x' }, { title: 'path C:.x' }));
    it('q searches the title only, not metadata', () => expectFilter('?q=invoice', { title: 'Invoice missing' }, { title: 'Other', metadata: { topic: 'invoice' } }));
    it('is_simulation=true', () => expectFilter('?is_simulation=true', { isSimulation: true }, { isSimulation: false }));
    it('is_simulation=0', () => expectFilter('?is_simulation=0', { isSimulation: false }, { isSimulation: true }));
    it('is_onboarding=1', () => expectFilter('?is_onboarding=1', { isOnboarding: true }, { isOnboarding: false }));
    it('is_onboarding=false', () => expectFilter('?is_onboarding=false', { isOnboarding: false }, { isOnboarding: true }));
  });

  describe('created_before / last_message_before: every row at or before the bound, whatever its id', () => {
    it.each([
      ['created_before', 'createdAt'],
      ['last_message_before', 'lastMessageAt'],
    ] as const)('%s pages through rows with older ids and backdated rows with newer ids, newest id first', async (param, column) => {
      const org = await createOrg(t.app);
      const bound = new Date('2026-06-01T12:00:00.500Z');
      const at = (iso: string) => new Date(iso);
      // ids minted at the given second; the time column set independently
      const row = (idAt: string, time: string) =>
        insertConversation(t.connection.db, org.orgId, { id: newId('conversation', at(idAt)), [column]: at(time) });
      const oldOnTime = await row('2026-05-01T00:00:00Z', '2026-05-01T00:00:00Z');
      const sameSecond = await row('2026-06-01T12:00:00Z', '2026-06-01T12:00:00.400Z');
      const backdatedNewId = await row('2026-09-01T00:00:00Z', '2026-04-01T00:00:00Z');
      const backdatedToBound = await row('2026-06-01T12:00:01Z', '2026-06-01T12:00:00.500Z');
      await row('2026-06-01T12:00:00Z', '2026-06-01T12:00:00.600Z'); // same second, after the bound
      await row('2026-05-01T00:00:00Z', '2026-07-01T00:00:00Z'); // old id, time after the bound
      await row('2026-10-01T00:00:00Z', '2026-10-01T00:00:00Z');
      const expected = [backdatedNewId, backdatedToBound, sameSecond, oldOnTime].sort().reverse();

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: Response = await list(org, `?${param}=${bound.toISOString()}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(res.status).toBe(200);
        seen.push(...ids(res));
        cursor = res.body.meta.next_cursor;
      } while (cursor);
      expect(seen).toEqual(expected);
      expect(ids(await list(org, `?${param}=${bound.toISOString()}`))).toEqual(expected);
    });
  });

  describe('created_after: every row at or after the bound, whatever its id, beside the *_before bounds (after the bound: no id between them)', () => {
    it('pages through rows with newer ids and rows created later than their id\'s second, newest id first', async () => {
      const org = await createOrg(t.app);
      const at = (iso: string) => new Date(iso);
      // [id second, created_at, last_message_at]: ids minted at the given second, the times set independently
      const specs: Array<[string, string, string]> = [
        ['2026-05-01T00:00:00Z', '2026-05-01T00:00:00Z', '2026-05-01T00:00:00Z'],
        ['2026-06-01T12:00:00Z', '2026-06-01T12:00:00.400Z', '2026-06-01T12:00:00.400Z'], // same second, before the bound
        ['2026-06-01T12:00:00Z', '2026-06-01T12:00:00.600Z', '2026-06-02T00:00:00Z'], // same second, after it
        ['2026-06-01T12:00:00Z', '2026-06-01T12:00:00.999Z', '2026-06-01T12:00:00.999Z'], // under a second after its id
        ['2026-06-01T11:59:59Z', '2026-06-01T12:00:00.600Z', '2026-06-01T12:00:00.600Z'], // a second after its id, before the bound's
        ['2026-05-01T00:00:00Z', '2026-07-01T00:00:00Z', '2026-04-15T00:00:00Z'], // created two months after its id
        ['2026-05-10T00:00:00Z', '2026-07-01T00:00:00Z', '2026-05-01T00:00:00Z'],
        ['2026-09-01T00:00:00Z', '2026-04-01T00:00:00Z', '2026-09-01T00:00:00Z'], // backdated
        ['2026-09-15T00:00:00Z', '2026-08-01T00:00:00Z', '2026-09-15T00:00:00Z'], // backdated, after the bound
        ['2026-10-01T00:00:00Z', '2026-10-01T00:00:00Z', '2026-10-01T00:00:00Z'],
      ];
      const rows: Array<{ id: string; createdAt: Date; lastMessageAt: Date }> = [];
      for (const [idAt, created, lastMessage] of specs) {
        const row = { id: newId('conversation', at(idAt)), createdAt: at(created), lastMessageAt: at(lastMessage) };
        await insertConversation(t.connection.db, org.orgId, row);
        rows.push(row);
      }
      const bound = at('2026-06-01T12:00:00.500Z');
      const cases: Array<[string, (row: (typeof rows)[number]) => boolean]> = [
        [`created_after=${bound.toISOString()}`, (row) => row.createdAt >= bound],
        [`created_after=${bound.toISOString()}&created_before=2026-08-15T00:00:00Z`, (row) => row.createdAt >= bound && row.createdAt <= at('2026-08-15T00:00:00Z')],
        [`created_after=${bound.toISOString()}&last_message_before=2026-05-05T00:00:00Z`, (row) => row.createdAt >= bound && row.lastMessageAt <= at('2026-05-05T00:00:00Z')],
        [`created_after=${bound.toISOString()}&last_message_before=2026-06-15T00:00:00Z`, (row) => row.createdAt >= bound && row.lastMessageAt <= at('2026-06-15T00:00:00Z')],
        ['created_after=2026-06-01T12:00:00Z&created_before=2026-06-01T12:00:00.700Z', (row) => row.createdAt >= at('2026-06-01T12:00:00Z') && row.createdAt <= at('2026-06-01T12:00:00.700Z')],
        [`created_after=${bound.toISOString()}&created_before=2026-05-15T00:00:00Z`, () => false],
        ['created_after=2026-11-01T00:00:00Z', () => false],
      ];
      for (const [query, keep] of cases) {
        const expected = rows
          .filter(keep)
          .map((row) => row.id)
          .sort()
          .reverse();
        expect({ query, seen: await pagesOf(org, query, 1, 20) }).toEqual({ query, seen: expected });
        expect({ query, seen: ids(await list(org, `?${query}`)) }).toEqual({ query, seen: expected });
      }
      // the ids between the bounds are left out only where there are none
      const repository = t.app.get(ConversationsRepository);
      const shape = (filters: ConversationFilters) => repository.listQuery(org.orgId, filters, null, 2).shape;
      expect(shape({ createdAfter: bound.toISOString(), lastMessageBefore: '2026-05-05T00:00:00Z' })).toContain('empty:created');
      expect(shape({ createdAfter: bound.toISOString(), createdBefore: '2026-08-15T00:00:00Z' })).not.toContain('empty:created');
      expect(shape({ createdAfter: bound.toISOString() })).not.toContain('empty:created');
    });
  });

  describe('sub-agent runs appear only when source=sub-agent is passed', () => {
    it('hides them by default and by parent, shows them with source=sub-agent', async () => {
      const org = await createOrg(t.app);
      const parent = await insertConversation(t.connection.db, org.orgId, { source: 'dashboard' });
      const run = await insertConversation(t.connection.db, org.orgId, { source: 'sub-agent', parentConversationId: parent, conversationNumber: null });
      const otherParent = await insertConversation(t.connection.db, org.orgId, { source: 'dashboard' });
      await insertConversation(t.connection.db, org.orgId, { source: 'sub-agent', parentConversationId: otherParent, conversationNumber: null });

      expect(ids(await list(org, ''))).toEqual([otherParent, parent]);
      expect(ids(await list(org, `?parent_conversation_id=${parent}`))).toEqual([]);
      const runs = await list(org, `?source=sub-agent&parent_conversation_id=${parent.slice('conv_'.length)}`);
      expect(ids(runs)).toEqual([run]);
      expect(runs.body.data[0]).toMatchObject({ parent_conversation_id: parent, conversation_number: null });
    });
  });

  describe('invalid query parameters → 422 naming the parameter', () => {
    const cases: Array<[string, string]> = [
      ['?source=email', 'source'],
      ['?source=embed&source=dashboard', 'source'],
      ['?created_after=yesterday', 'created_after'],
      ['?created_before=2026-02-30T00:00:00Z', 'created_before'],
      ['?last_message_after=2026-03-01', 'last_message_after'],
      ['?last_message_before=2026-13-01T00:00:00Z', 'last_message_before'],
      ['?since=0', 'since'],
      ['?conversation_number=1.5', 'conversation_number'],
      ['?conversation_number=0', 'conversation_number'],
      ['?conversation_number=abc', 'conversation_number'],
      ['?is_simulation=yes', 'is_simulation'],
      ['?is_onboarding=TRUE', 'is_onboarding'],
      ['?agent_id=not-an-id', 'agent_id'],
      ['?parent_conversation_id=agent_0123456789abcdef01234567', 'parent_conversation_id'],
      ['?metadata[$where]=1', 'metadata[$where]'],
      ['?metadata[a.b]=1', 'metadata[a.b]'],
      ['?metadata[]=1', 'metadata[]'],
      ['?metadata[k]=1&metadata[k]=2', 'metadata[k]'],
      // a mistyped metadata filter is refused, not ignored as an unknown parameter (the list would widen)
      ['?metadata[ticketId=5', 'metadata[ticketId'],
      ['?metadata[ticketId]x=5', 'metadata[ticketId]x'],
      ['?metadata[=5', 'metadata['],
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?cursor=garbage', 'cursor'],
    ];
    it.each(cases)('%s', async (query, param) => {
      const org = await createOrg(t.app);
      const res = await list(org, query);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      expect(Object.keys(res.body.error.details.fields)).toContain(param);
    });
  });

  describe('pagination across filters: every matching item exactly once', () => {
    it('walks all pages of a filtered list and restarts when the filters change', async () => {
      const org = await createOrg(t.app);
      const agentId = newId('agent');
      const matching: string[] = [];
      for (let i = 0; i < 11; i += 1) {
        matching.push(await insertConversation(t.connection.db, org.orgId, { agentId, metadata: { team: 'billing' }, title: `Billing ${i}` }));
        await insertConversation(t.connection.db, org.orgId, { agentId, metadata: { team: 'support' }, title: `Billing ${i}` });
      }
      const query = `agent_id=${agentId}&metadata[team]=billing&q=billing`;
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await list(org, `?${query}&limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(res.status).toBe(200);
        seen.push(...ids(res));
        cursor = res.body.meta.next_cursor;
        pages += 1;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual([...matching].reverse());

      const first = await list(org, `?${query}&limit=5`);
      const changed = await list(org, `?agent_id=${agentId}&limit=5&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`);
      expect(changed.status).toBe(422);
      expect(Object.keys(changed.body.error.details.fields)).toEqual(['cursor']);
    });

    it('limit equal to the number of items gives next_cursor null; limit one less gives a cursor to the last item', async () => {
      const org = await createOrg(t.app);
      const all = [];
      for (let i = 0; i < 3; i += 1) all.push(await insertConversation(t.connection.db, org.orgId));
      const exact = await list(org, '?limit=3');
      expect(ids(exact)).toEqual([...all].reverse());
      expect(exact.body.meta.next_cursor).toBeNull();
      const short = await list(org, '?limit=2');
      expect(ids(short)).toEqual([all[2], all[1]]);
      const rest = await list(org, `?limit=2&cursor=${encodeURIComponent(short.body.meta.next_cursor)}`);
      expect(ids(rest)).toEqual([all[0]]);
      expect(rest.body.meta.next_cursor).toBeNull();
    });
  });

  describe('GET /conversations/{id}: ConversationDetail with the full thread', () => {
    it('returns messages oldest first, the real message_count and no trigger_payload by default', async () => {
      const org = await createOrg(t.app);
      const id = await insertConversation(
        t.connection.db,
        org.orgId,
        { source: 'autonomous', autonomous: true, triggerPayload: { ticket: { id: 9, email: 'x@example.com' } } },
        [
          { role: 'user', content: 'Where is my order?', createdAt: new Date('2026-01-01T00:00:00Z') },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"id":1}', status: 'completed' }],
            model: 'gpt-4o',
          },
          { role: 'tool', content: '{"status":"shipped"}', toolCallId: 'call_1', toolName: 'lookup_order', connectorType: 'shopify' },
        ],
      );
      const res = await t.http.get(`/api/v1/conversations/${id}`).set('Authorization', org.auth);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.data).sort()).toEqual([...SUMMARY_KEYS, 'messages'].sort());
      expect(res.body.data.message_count).toBe(3);
      expect(res.body.data.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool']);
      for (const message of res.body.data.messages) expect(Object.keys(message).sort()).toEqual(MESSAGE_KEYS);
      expect(res.body.data.messages[0]).toMatchObject({ tool_calls: null, tool_call_id: null, created_at: '2026-01-01T00:00:00.000Z' });
      expect(res.body.data.messages[1].tool_calls).toEqual([{ id: 'call_1', name: 'lookup_order', arguments: '{"id":1}', status: 'completed' }]);
      expect(res.body.data.messages[2]).toMatchObject({ tool_call_id: 'call_1', tool_name: 'lookup_order', connector_type: 'shopify' });
      expect(JSON.stringify(res.body)).not.toContain('x@example.com');
    });

    it.each(['true', '1'])('include_trigger_payload=%s adds trigger_payload', async (value) => {
      const org = await createOrg(t.app);
      const id = await insertConversation(t.connection.db, org.orgId, { triggerPayload: { ticket: { id: 9 } } });
      const res = await t.http.get(`/api/v1/conversations/${id}?include_trigger_payload=${value}`).set('Authorization', org.auth);
      expect(res.status).toBe(200);
      expect(res.body.data.trigger_payload).toEqual({ ticket: { id: 9 } });
      const none = await insertConversation(t.connection.db, org.orgId);
      const empty = await t.http.get(`/api/v1/conversations/${none}?include_trigger_payload=${value}`).set('Authorization', org.auth);
      expect(empty.body.data).toHaveProperty('trigger_payload', null);
    });

    it('include_trigger_payload=false leaves it out; other values are 422', async () => {
      const org = await createOrg(t.app);
      const id = await insertConversation(t.connection.db, org.orgId, { triggerPayload: { ticket: { id: 9 } } });
      const off = await t.http.get(`/api/v1/conversations/${id}?include_trigger_payload=false`).set('Authorization', org.auth);
      expect(off.status).toBe(200);
      expect(off.body.data).not.toHaveProperty('trigger_payload');
      const bad = await t.http.get(`/api/v1/conversations/${id}?include_trigger_payload=yes`).set('Authorization', org.auth);
      expect(bad.status).toBe(422);
      expect(Object.keys(bad.body.error.details.fields)).toEqual(['include_trigger_payload']);
    });

    it('accepts the bare 24-hex id; unknown and malformed ids are 404 not_found', async () => {
      const org = await createOrg(t.app);
      const id = await insertConversation(t.connection.db, org.orgId);
      const bare = await t.http.get(`/api/v1/conversations/${id.slice('conv_'.length)}`).set('Authorization', org.auth);
      expect(bare.status).toBe(200);
      expect(bare.body.data.id).toBe(id);
      for (const path of [newId('conversation'), 'conv_123', newId('agent')]) {
        const res = await t.http.get(`/api/v1/conversations/${path}`).set('Authorization', org.auth);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
    });
  });

  describe('GET /conversations/{id}/messages: oldest first, paginated', () => {
    it('pages through the thread once, in order', async () => {
      const org = await createOrg(t.app);
      const thread = Array.from({ length: 7 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i}` }));
      const id = await insertConversation(t.connection.db, org.orgId, {}, thread);
      const contents: string[] = [];
      let cursor: string | null = null;
      do {
        const res: Response = await t.http
          .get(`/api/v1/conversations/${id}/messages?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
          .set('Authorization', org.auth);
        expect(res.status).toBe(200);
        for (const message of res.body.data) expect(Object.keys(message).sort()).toEqual(MESSAGE_KEYS);
        contents.push(...res.body.data.map((m: { content: string }) => m.content));
        cursor = res.body.meta.next_cursor;
      } while (cursor);
      expect(contents).toEqual(thread.map((m) => m.content));
    });

    it('an empty thread is an empty page; an unknown conversation is 404', async () => {
      const org = await createOrg(t.app);
      const id = await insertConversation(t.connection.db, org.orgId);
      const empty = await t.http.get(`/api/v1/conversations/${id}/messages`).set('Authorization', org.auth);
      expect(empty.status).toBe(200);
      expect(empty.body.data).toEqual([]);
      expect(empty.body.meta.next_cursor).toBeNull();
      const missing = await t.http.get(`/api/v1/conversations/${newId('conversation')}/messages`).set('Authorization', org.auth);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
    });

    it('a cursor of one thread is refused on another', async () => {
      const org = await createOrg(t.app);
      const one = await insertConversation(t.connection.db, org.orgId, {}, [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }]);
      const two = await insertConversation(t.connection.db, org.orgId, {}, [{ role: 'user', content: 'c' }, { role: 'user', content: 'd' }]);
      const first = await t.http.get(`/api/v1/conversations/${one}/messages?limit=1`).set('Authorization', org.auth);
      const res = await t.http
        .get(`/api/v1/conversations/${two}/messages?limit=1&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`)
        .set('Authorization', org.auth);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.details.fields)).toEqual(['cursor']);
    });
  });

  describe('organization status', () => {
    it('a suspended organization cannot read conversations (403 org_inactive)', async () => {
      const org = await createOrg(t.app, { status: 'suspended' });
      const res = await list(org, '');
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('org_inactive');
    });
  });

  describe('organization isolation', () => {
    it("org B sees none of org A's conversations and gets 404 for their ids", async () => {
      const orgA = await createOrg(t.app);
      const orgB = await createOrg(t.app);
      const id = await insertConversation(t.connection.db, orgA.orgId, { metadata: { ticketId: 'shared' } }, [{ role: 'user', content: 'secret' }]);
      expect(ids(await list(orgB, ''))).toEqual([]);
      expect(ids(await list(orgB, '?ticket_id=shared'))).toEqual([]);
      for (const path of [`/api/v1/conversations/${id}`, `/api/v1/conversations/${id}/messages`]) {
        const res = await t.http.get(path).set('Authorization', orgB.auth);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      expect(ids(await list(orgA, '?ticket_id=shared'))).toEqual([id]);
    });
  });

  describe('q: the newest rows first, then the trigram index', () => {
    /**
     * More rows than the probe reads, one a second from `start`: the oldest
     * three say "walrus", every other one "help".
     */
    async function insertProbeRows<Extra extends object>(org: { orgId: string }, start: number, extra: (i: number) => Extra = () => ({}) as Extra) {
      const rows = Array.from({ length: Q_PROBE_ROWS + 10 }, (_, i) => ({
        id: newId('conversation', new Date(start + i * 1000)),
        orgId: org.orgId,
        title: i < 3 ? `walrus question ${i}` : `help with order ${i}`,
        source: 'dashboard',
        conversationNumber: i + 1,
        createdAt: new Date(start + i * 1000),
        ...extra(i),
      }));
      for (let i = 0; i < rows.length; i += 1000) await t.connection.db.insert(conversations).values(rows.slice(i, i + 1000));
      return rows;
    }

    it('finds a term in many titles among the newest rows, and a term only in rows older than the probe through the index, with the same pages', async () => {
      const org = await createOrg(t.app);
      const rows = await insertProbeRows(org, Date.parse('2026-01-01T00:00:00Z'));
      const newestFirst = rows.map((row) => row.id).reverse();

      const common = await list(org, '?q=help&limit=5');
      expect(ids(common)).toEqual(newestFirst.slice(0, 5));
      const next = await list(org, `?q=help&limit=5&cursor=${common.body.meta.next_cursor}`);
      expect(ids(next)).toEqual(newestFirst.slice(5, 10));
      const rare = await list(org, '?q=WALRUS&limit=2');
      expect(ids(rare)).toEqual(newestFirst.slice(-2 - 1, -1));
      const rest = await list(org, `?q=WALRUS&limit=2&cursor=${rare.body.meta.next_cursor}`);
      expect(ids(rest)).toEqual(newestFirst.slice(-1));
      expect(rest.body.meta.next_cursor).toBeNull();
    });
    it('with metadata[…] beside it, checks the metadata on the probed rows and finds older matches through the index, in order, page after page', async () => {
      const org = await createOrg(t.app);
      // "gold" only on old rows outside the probe, "email" on every seventh row
      const rows = await insertProbeRows(org, Date.parse('2026-02-01T00:00:00Z'), (i) => ({
        metadata: { channel: i % 7 === 0 ? 'email' : 'web', ...(i >= 3 && i < 8 ? { tier: 'gold' } : {}) },
      }));
      // the plain filter, newest first
      const expected = (word: string, key: 'channel' | 'tier', value: string) =>
        rows
          .filter((row) => row.title.includes(word) && (row.metadata as Record<string, string>)[key] === value)
          .map((row) => row.id)
          .reverse();
      const pages = (query: string, limit: number, max: number) => pagesOf(org, query, limit, max);

      // matches among the probed rows
      expect(await pages('q=help&metadata[channel]=email', 4, 3)).toEqual(expected('help', 'channel', 'email').slice(0, 12));
      // matches only older than the probed rows, and every one of them
      expect(await pages('q=help&metadata[tier]=gold', 2, 10)).toEqual(expected('help', 'tier', 'gold'));
      expect(await pages('q=walrus&metadata[channel]=email', 2, 10)).toEqual(expected('walrus', 'channel', 'email'));
      expect(await pages('q=walrus&metadata[tier]=silver', 2, 10)).toEqual([]);
    });
  });

  describe('metadata[…]: the newest rows first, then the metadata index (alone) or the term\'s matches (beside q)', () => {
    it('gives the plain filter\'s rows, newest first, page after page, beside other filters, below a *_before bound and beside q', async () => {
      const repository = t.app.get(ConversationsRepository);
      const org = await createOrg(t.app);
      const agent = 'agent_5ca1e2000000000000000077';
      const start = Date.parse('2026-06-01T00:00:00Z');
      const at = (i: number) => new Date(start + i * 1000);
      // more rows than the probe reads: "email" on every seventh, "gold" only on old rows outside the probe;
      // every third row backdated by a day (the split's second branch), one in 500 postdated
      const rows = Array.from({ length: Q_PROBE_ROWS + 10 }, (_, i) => ({
        id: newId('conversation', at(i)),
        orgId: org.orgId,
        title: i < 30 ? `walrus ${i}` : `order ${i}`,
        source: 'dashboard',
        agentId: i % 5 === 0 ? agent : null,
        conversationNumber: i + 1,
        metadata: { channel: i % 7 === 0 ? 'email' : 'web', ...(i >= 3 && i < 9 ? { tier: 'gold' } : {}) },
        createdAt: new Date(at(i).getTime() + (i % 500 === 250 ? 86_400_000 : i % 3 === 0 ? -86_400_000 : 0)),
        lastMessageAt: at(i % 2 === 0 ? i : i - 3000),
      }));
      for (let i = 0; i < rows.length; i += 1000) await t.connection.db.insert(conversations).values(rows.slice(i, i + 1000));
      type Row = (typeof rows)[number];
      const expected = (keep: (row: Row) => boolean) =>
        rows
          .filter(keep)
          .map((row) => row.id)
          .reverse();
      const email = (row: Row) => row.metadata.channel === 'email';
      const gold = (row: Row) => row.metadata.tier === 'gold';
      const before = at(4000);
      const after = at(Q_PROBE_ROWS - 100);
      const cases: Array<[string, (row: Row) => boolean]> = [
        // a common value: the probe's rows fill the pages
        ['metadata[channel]=email', email],
        [`metadata[channel]=email&agent_id=${agent}`, (row) => email(row) && row.agentId === agent],
        [`metadata[channel]=email&created_before=${before.toISOString()}`, (row) => email(row) && row.createdAt <= before],
        [`metadata[channel]=email&last_message_before=${before.toISOString()}`, (row) => email(row) && row.lastMessageAt <= before],
        [`metadata[channel]=email&created_after=${after.toISOString()}`, (row) => email(row) && row.createdAt >= after],
        // a value only older than the probed rows: its index answers, every row of it
        ['metadata[tier]=gold', gold],
        [`metadata[tier]=gold&created_before=${before.toISOString()}`, (row) => gold(row) && row.createdAt <= before],
        [`metadata[tier]=gold&last_message_before=${at(2).toISOString()}`, (row) => gold(row) && row.lastMessageAt <= at(2)],
        ['metadata[tier]=silver', () => false],
        // beside `q`, the trigram step checks the metadata on the term's matches: the newest of them do not pass
        ['q=walrus&metadata[tier]=gold', (row) => row.title.startsWith('walrus') && gold(row)],
        ['q=walrus&metadata[channel]=email', (row) => row.title.startsWith('walrus') && email(row)],
      ];
      for (const [query, keep] of cases) {
        const want = expected(keep);
        expect({ query, seen: await pagesOf(org, query, 7, 30) }).toEqual({ query, seen: want.slice(0, 7 * 30) });
      }
      // the common cases are long enough to cross pages, and the split's backdated rows are among them
      expect(expected((row) => email(row) && row.createdAt <= before).length).toBeGreaterThan(100);
      // the probe reads below a *_before bound for metadata alone; beside `q` the split query answers
      expect(repository.probe(org.orgId, { metadata: { channel: 'email' }, lastMessageBefore: before.toISOString() }, null, 8)).not.toBeNull();
      expect(repository.probe(org.orgId, { metadata: { channel: 'email' }, q: 'order', createdBefore: before.toISOString() }, null, 8)).toBeNull();
      expect(repository.probe(org.orgId, { agentId: agent }, null, 8)).toBeNull();
    });
  });

  describe('q beside created_after / last_message_after: the bounds checked on the probed rows', () => {
    it('gives the plain filter\'s rows, newest first, page after page, with backdated and postdated rows', async () => {
      const org = await createOrg(t.app);
      const start = Date.parse('2026-05-01T00:00:00Z');
      const at = (i: number) => new Date(start + i * 1000);
      const rows = Array.from({ length: Q_PROBE_ROWS + 10 }, (_, i) => ({
        id: newId('conversation', at(i)),
        orgId: org.orgId,
        title: i < 3 ? `walrus question ${i}` : `help with order ${i}`,
        source: 'dashboard',
        conversationNumber: i + 1,
        // every third row backdated by a day; the oldest "walrus" row and one in a thousand others postdated by a day
        createdAt: new Date(at(i).getTime() + (i === 1 || i % 1000 === 500 ? 86_400_000 : i % 3 === 0 ? -86_400_000 : 0)),
        lastMessageAt: at(i % 2 === 0 ? i : i - 4000),
      }));
      for (let i = 0; i < rows.length; i += 1000) await t.connection.db.insert(conversations).values(rows.slice(i, i + 1000));
      const expected = (word: string, key: 'createdAt' | 'lastMessageAt', after: Date) =>
        rows
          .filter((row) => row.title.includes(word) && row[key].getTime() >= after.getTime())
          .map((row) => row.id)
          .reverse();
      const pages = (query: string, limit: number, max: number) => pagesOf(org, query, limit, max);
      const bound = at(Q_PROBE_ROWS - 40);
      expect(expected('help', 'createdAt', bound).length).toBeGreaterThan(30);
      expect(await pages(`q=help&created_after=${bound.toISOString()}`, 7, 20)).toEqual(expected('help', 'createdAt', bound));
      expect(await pages(`q=walrus&created_after=${bound.toISOString()}`, 2, 5)).toEqual(expected('walrus', 'createdAt', bound));
      expect(await pages(`q=help&last_message_after=${bound.toISOString()}`, 9, 20)).toEqual(expected('help', 'lastMessageAt', bound));
      expect(await pages(`q=walrus&last_message_after=${at(0).toISOString()}`, 2, 5)).toEqual(expected('walrus', 'lastMessageAt', at(0)));
    });
  });

  describe('q by id buckets (a frequent term away from the newest rows)', () => {
    /** 18-hour buckets: one row every 5.5 hours spans a dozen of them; another organization's rows share them. */
    const TITLES = ['Gecko-42 question', 'the gecko', 'GECKO!', 'geck o', 'Ünïcode gecko', '100% sure', 'under_score', 'help with order', 'GeCkO and 42'];
    async function insertBucketRows(orgId: string, start: number) {
      const rows = Array.from({ length: 54 }, (_, i) => ({
        id: newId('conversation', new Date(start + i * 5.5 * 3600_000)),
        orgId,
        title: `${TITLES[i % TITLES.length]} ${i}`,
        source: i % 4 === 0 ? 'embed' : 'dashboard',
        conversationNumber: i + 1,
        // backdated and postdated rows: the order and the buckets are the id's, not created_at's
        createdAt: new Date(start + (i % 5 === 0 ? -400 : i) * 3600_000),
      }));
      await t.connection.db.insert(conversations).values(rows);
    }

    it('returns the plain ILIKE query\'s rows, in its order, page after page, for any term and filter', async () => {
      const repository = t.app.get(ConversationsRepository);
      const [org, other] = [await createOrg(t.app), await createOrg(t.app)];
      const start = Date.parse('2026-03-01T00:00:00Z');
      await insertBucketRows(org.orgId, start);
      await insertBucketRows(other.orgId, start + 1000);
      const plain = async (q: string, source?: string) => {
        const c = conversations;
        const rows = await t.connection.db
          .select({ id: c.id })
          .from(c)
          .where(and(eq(c.orgId, org.orgId), ilike(c.title, `%${q.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`), source ? eq(c.source, source) : undefined))
          .orderBy(desc(c.id));
        return rows.map((row) => row.id);
      };
      const cases = [['gecko', undefined], ['ECK', undefined], ['gecko', 'embed'], ['cko-42', undefined], ['100% s', undefined], ['under_sc', 'dashboard'], ['and 4', undefined], ['zzz', undefined]] as const;
      const expectPlainPages = async () => {
        for (const [q, source] of cases) {
          const seen: string[] = [];
          let afterId: string | null = null;
          for (let page = 0; page < 30; page += 1) {
            const rows: Array<{ id: string }> | null = await repository.listByBuckets(org.orgId, { q, ...(source ? { source } : {}) }, afterId, 4);
            expect({ q, rows: rows === null ? null : 'page' }).toEqual({ q, rows: 'page' });
            seen.push(...rows!.map((row) => row.id));
            if (rows!.length < 4) break;
            afterId = rows![rows!.length - 1].id;
          }
          expect({ q, source, seen }).toEqual({ q, source, seen: await plain(q, source) });
        }
      };
      // a small organization's lookups carry its bucket key
      await expectPlainPages();
      // one dense in every bucket (its 5,000th newest row as new as its newest) does without: the other
      // organization's rows of the same buckets are told apart by the filter alone
      const scope = repository.bucketScope.execute.bind(repository.bucketScope);
      const dense = jest.spyOn(repository.bucketScope, 'execute').mockImplementation(async (values) => (await scope(values)).map((row) => ({ ...row, edge: row.newest })));
      try {
        await expectPlainPages();
      } finally {
        dense.mockRestore();
      }
    });

    it('stops after reading its row bound of the term\'s matches without a full page, and says so (null), never a short page', async () => {
      const repository = t.app.get(ConversationsRepository);
      const org = await createOrg(t.app);
      await insertBucketRows(org.orgId, Date.parse('2026-07-01T00:00:00Z'));
      const c = conversations;
      const plain = (
        await t.connection.db
          .select({ id: c.id })
          .from(c)
          .where(and(eq(c.orgId, org.orgId), ilike(c.title, '%gecko%'), eq(c.source, 'embed')))
          .orderBy(desc(c.id))
      ).map((row) => row.id);
      expect(plain.length).toBeGreaterThan(4);
      const answers: Array<[number, string[] | null]> = [];
      for (const rowBound of [1, 2, 3, 5, 8, 13, 21, 34, 55, 1_000]) {
        const rows = await repository.listByBuckets(org.orgId, { q: 'gecko', source: 'embed' }, null, 4, undefined, rowBound);
        answers.push([rowBound, rows === null ? null : rows.map((row) => row.id)]);
      }
      // a small bound stops before the page is full (null: the next step answers); a large one gives the page;
      // whatever the bound, a page is never cut short by it
      expect(answers[0]).toEqual([1, null]);
      expect(answers[answers.length - 1]).toEqual([1_000, plain.slice(0, 4)]);
      for (const [rowBound, ids] of answers) if (ids !== null) expect({ rowBound, ids }).toEqual({ rowBound, ids: plain.slice(0, 4) });
      // the last page, shorter than the limit, is exact when the walk reached the oldest bucket within the bound
      const last = await repository.listByBuckets(org.orgId, { q: 'gecko', source: 'embed' }, plain[plain.length - 2], 4, undefined, 1_000);
      expect(last?.map((row) => row.id)).toEqual(plain.slice(-1));
      // and without any match: an empty page, not a bound
      expect(await repository.listByBuckets(org.orgId, { q: 'zzzzqq' }, null, 4, undefined, 1)).toEqual([]);
    });

    it('measures the filters beside a frequent term only where the buckets can take them, and only with enough rows', async () => {
      const repository = t.app.get(ConversationsRepository);
      const org = await createOrg(t.app);
      await insertBucketRows(org.orgId, Date.parse('2026-05-01T00:00:00Z'));
      // filters whose index does not return rows newest first are not measured: the trigram step takes them
      expect(repository.qDensity(org.orgId, { q: 'gecko', metadata: { channel: 'email' } }, null)).toBeNull();
      expect(repository.qDensity(org.orgId, { q: 'gecko', source: 'embed', createdAfter: '2026-05-01T00:00:00Z' }, null)).toBeNull();
      expect(repository.qDensity(org.orgId, { q: 'gecko', source: 'embed', isSimulation: false }, null)).not.toBeNull();
      // 54 rows: fewer than the probe reads, so the filters are not called common (the trigram step reads few rows)
      const [scope] = await repository.bucketScope.execute({ orgId: org.orgId, q: 'gecko' });
      expect(scope.edge).toBeNull();
      expect(await repository.commonFilters(org.orgId, { q: 'gecko', source: 'dashboard' }, null, scope)).toBe(false);
      // and as if the organization had them (its 5,000th newest row as new as its newest): a value whose newest
      // 5,000 rows are fewer is not common either; the page is still the plain query's
      expect(await repository.commonFilters(org.orgId, { q: 'gecko', source: 'dashboard' }, null, { ...scope, edge: scope.newest })).toBe(false);
      const page = await list(org, '?q=gecko&source=embed&limit=3');
      expect(page.status).toBe(200);
      expect(page.body.data).toHaveLength(3);
      expect(page.body.data.every((item: { source: string; title: string }) => item.source === 'embed' && /gecko/i.test(item.title))).toBe(true);
    });

    it('does not apply to a term without three letters or digits in a row (the walk answers it)', async () => {
      const repository = t.app.get(ConversationsRepository);
      const org = await createOrg(t.app);
      await insertBucketRows(org.orgId, Date.parse('2026-04-01T00:00:00Z'));
      for (const q of ['ge', '% s', 'Ün']) expect(await repository.listByBuckets(org.orgId, { q }, null, 4)).toBeNull();
      // an organization without conversations
      expect(await repository.listByBuckets((await createOrg(t.app)).orgId, { q: 'gecko' }, null, 4)).toBeNull();
    });
  });

  describe('prepared list statements, one per filter shape', () => {
    it('reuses one statement per plan-stable shape across values, organizations and pages, with the right rows', async () => {
      const repository = t.app.get(ConversationsRepository);
      const [orgA, orgB] = [await createOrg(t.app), await createOrg(t.app)];
      const agentA = await insertAgent(t.connection.db, orgA.orgId);
      const agentB = await insertAgent(t.connection.db, orgB.orgId);
      const a1 = await insertConversation(t.connection.db, orgA.orgId, { agentId: agentA, source: 'dashboard' });
      const a2 = await insertConversation(t.connection.db, orgA.orgId, { agentId: agentA, source: 'dashboard' });
      await insertConversation(t.connection.db, orgA.orgId, { agentId: agentA, source: 'sub-agent' });
      const b1 = await insertConversation(t.connection.db, orgB.orgId, { agentId: agentB, source: 'dashboard' });
      const before = repository.preparedShapes().length;

      const first = await list(orgA, `?agent_id=${agentA}&limit=1`);
      expect(ids(first)).toEqual([a2]);
      const next = await list(orgA, `?agent_id=${agentA}&limit=1&cursor=${first.body.meta.next_cursor}`);
      expect(ids(next)).toEqual([a1]);
      expect(ids(await list(orgB, `?agent_id=${agentB}`))).toEqual([b1]);
      // another organization's agent id in the same shape: nothing
      expect(ids(await list(orgB, `?agent_id=${agentA}`))).toEqual([]);
      // two shapes: the first page, and a page after a cursor
      expect(repository.preparedShapes().length - before).toBeLessThanOrEqual(2);
      const shapes = repository.preparedShapes();
      expect(shapes).toContain('not_sub_agent,agentId,unsplit');
      expect(shapes).toContain('not_sub_agent,agentId,afterId,unsplit');
    });

    it('leaves shapes whose best plan depends on the values to be planned per request', async () => {
      const repository = t.app.get(ConversationsRepository);
      const org = await createOrg(t.app);
      const hit = await insertConversation(t.connection.db, org.orgId, { title: 'Refund for order 7', metadata: { channel: 'email' } });
      const agent = await insertAgent(t.connection.db, org.orgId);
      const combined = await insertConversation(t.connection.db, org.orgId, { agentId: agent, source: 'embed', model: 'gpt-4o' });
      const queries = ['?q=refund', '?metadata[channel]=email', '?ticket_id=7', '?created_after=2000-01-01T00:00:00Z&q=refund', '?created_before=2100-01-01T00:00:00Z&q=refund'];
      for (const query of queries) {
        const res = await list(org, query);
        expect(res.status).toBe(200);
        // the conversation has no ticket id: that filter matches nothing
        expect({ query, ids: ids(res) }).toEqual({ query, ids: query === '?ticket_id=7' ? [] : [hit] });
      }
      // two equalities on skewed columns: how much their rows overlap depends on the values
      // and one of them beside any other filter, a flag included: an agent with a handful of rows and the
      // flag's thousands overlap by chance, and a generic plan walked the flag's rows for any agent
      const skewedBeside = [
        [`?agent_id=${agent}&model=gpt-4o`, [combined]],
        ['?source=embed&model=gpt-4o', [combined]],
        [`?agent_id=${agent}&source=embed`, [combined]],
        [`?agent_id=${agent}&is_simulation=true`, []],
        ['?model=gpt-4o&is_simulation=false', [combined]],
        ['?source=embed&is_onboarding=false', [combined]],
        [`?agent_id=${agent}&conversation_number=999999`, []],
      ] as const;
      for (const [query, expected] of skewedBeside) {
        for (let i = 0; i < 7; i += 1) expect({ query, ids: ids(await list(org, query)) }).toEqual({ query, ids: expected });
      }
      const valueDependent = /^(q|metadata\d+x\d+|ticketId|createdAfter|createdBefore|lastMessageAfter|lastMessageBefore|split:.*)$/;
      const skewed = ['source', 'agentId', 'model'];
      // the one exception, the id buckets' walk, runs with its generic plan forced (BUCKET_SCANS): its nested loops
      // read the same indexes whatever the values, and the bench compares that plan with the custom ones
      for (const shape of repository.preparedShapes().filter((name) => !name.startsWith('q-buckets:'))) {
        const terms = shape.split(',');
        expect(terms.filter((term) => valueDependent.test(term))).toEqual([]);
        // a skewed equality is prepared only alone (beside the default source condition and the cursor)
        if (terms.some((term) => skewed.includes(term))) {
          expect({ shape, others: terms.filter((term) => !skewed.includes(term) && !['not_sub_agent', 'afterId', 'unsplit'].includes(term)) }).toEqual({ shape, others: [] });
          expect(terms.filter((term) => skewed.includes(term)).length).toBe(1);
        }
      }
    });
  });
});
