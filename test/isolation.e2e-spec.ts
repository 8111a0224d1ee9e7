import { newObjectIdHex } from '../libs/ids/ids';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * spec: "A key belongs to one organization and only that organization's data
 * is visible." Generic and later-proof: every GET operation of the served
 * document that takes a path parameter must answer 404 in the error envelope
 * for ids that are not the caller's. The resource modules add tests with real
 * ids of another organization; this one needs no knowledge of any module.
 */
let t: TestApp;
let org: TestOrg;
let document: { paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>> };

beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t.app);
  document = (await t.http.get('/api/v1/openapi.json')).body;
});
afterAll(() => t.close());

/** The id prefix of a path's resource (`/agents/{id}` → `agent_`); unknown resources get a made-up one. */
const PREFIXES: Record<string, string> = {
  agents: 'agent_',
  conversations: 'conv_',
  connectors: 'connector_',
  custom_tools: 'tool_',
  sources: 'source_',
  chatbots: 'chatbot_',
  triggers: 'trigger_',
  analytics: 'agent_',
};

function parameterisedGets(): string[] {
  return Object.entries(document.paths)
    .filter(([path, item]) => item.get && /\{[^}]+\}/.test(path))
    .map(([path]) => path);
}

function fill(path: string, value: (prefix: string) => string): string {
  const resource = path.split('/')[1];
  const prefix = PREFIXES[resource] ?? `${resource.replace(/s$/, '')}_`;
  return path.replace(/\{[^}]+\}/g, () => value(prefix));
}

describe("a key gets 404 for ids that are not its organization's, on every GET with a path id", () => {
  test('made-up well-formed, bare and malformed ids → 404 in the envelope', async () => {
    const paths = parameterisedGets();
    const failures: string[] = [];
    for (const path of paths) {
      for (const make of [(prefix: string) => `${prefix}${newObjectIdHex()}`, () => newObjectIdHex(), () => 'not-an-id', () => 'agent_ZZZ']) {
        const url = `/api/v1${fill(path, make)}`;
        const res = await t.http.get(url).set('Authorization', org.auth);
        const ok =
          res.status === 404 &&
          ['not_found', 'agent_not_found'].includes(res.body?.error?.code) &&
          res.body.error.request_id === res.headers['x-request-id'];
        if (!ok) failures.push(`${url} → ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  test('the walk sees the document: the path template filler covers nested parameters', () => {
    // guards the test above against silently checking nothing when modules arrive
    expect(fill('/conversations/{id}/messages', (prefix) => `${prefix}x`)).toBe('/conversations/conv_x/messages');
    expect(fill('/analytics/agents/{agent_id}', (prefix) => `${prefix}x`)).toBe('/analytics/agents/agent_x');
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/org', '/team']));
  });
});

describe('org-scoped reads show only the calling organization', () => {
  test('GET /org and GET /team of two organizations never mix', async () => {
    const other = await createOrg(t.app);
    const mine = await t.http.get('/api/v1/org').set('Authorization', org.auth);
    const theirs = await t.http.get('/api/v1/org').set('Authorization', other.auth);
    expect(mine.body.data.id).toBe(org.orgId);
    expect(theirs.body.data.id).toBe(other.orgId);
  });
});
