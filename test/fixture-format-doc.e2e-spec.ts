import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FixtureLoader } from '../src/fixtures/fixture-loader.service';
import { FixtureRegistry } from '../src/fixtures/fixture-registry';
import { createTestApp, type TestApp } from './support/test-app';

/** docs/fixture-format.md stays true: its example loads, and every registered section is documented. */
const doc = readFileSync(join(__dirname, '..', 'docs', 'fixture-format.md'), 'utf8');
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

test('every fixture section the modules register has its own heading', () => {
  const sections = t.app.get(FixtureRegistry).ordered().map((section) => section.name);
  expect(sections.length).toBeGreaterThan(5);
  const missing = sections.filter((name) => !doc.includes(`### \`${name}[]\``));
  expect(missing).toEqual([]);
});

test('the complete example loads and the API serves what it describes', async () => {
  const example = /## A small complete example\s+```json\n([\s\S]*?)\n```/.exec(doc);
  expect(example).not.toBeNull();
  const document = JSON.parse(example![1]) as { orgs: Array<Record<string, unknown>> };
  const first = await t.app.get(FixtureLoader).load(document);
  expect(first.orgs).toEqual([{ id: 'org_6500000000000000000000aa', name: 'Acme' }]);
  expect(first.generated_keys.map((key) => key.id)).toEqual(['key_6500000000000000000000ab']);
  const token = first.generated_keys[0].token;
  const agent = await t.http.get('/api/v1/agents/agent_6500000000000000000000d1').set('Authorization', `Bearer ${token}`);
  expect(agent.status).toBe(200);
  expect(agent.body.data).toMatchObject({ handle: 'triage', tools_count: 1, connectors: ['connector_6500000000000000000000c1'] });
});
