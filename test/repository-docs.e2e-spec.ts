import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { SCOPES } from '../src/auth/scopes';
import { FixtureLoader } from '../src/fixtures/fixture-loader.service';
import { FixtureRegistry } from '../src/fixtures/fixture-registry';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The repository stands alone and its docs stay true: README and docs/ point
 * only at files that exist in it; the fixture format's example loads and
 * every registered section is documented; the scope list is complete.
 */
const ROOT = resolve(__dirname, '..');
const doc = readFileSync(join(ROOT, 'docs', 'fixture-format.md'), 'utf8');
const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
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

test('README and docs/ never send a reader outside the repository', () => {
  const problems: string[] = [];
  for (const page of pages) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    for (const outside of ['api-v1.md', 'operations.md', 'STYLE.md', '/work/']) if (text.includes(outside)) problems.push(`${page} names ${outside}`);
    for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // a URL (http://localhost…)
      if (!existsSync(resolve(dirname(join(ROOT, page)), target))) problems.push(`${page} links to ${target}, which is not in the repository`);
    }
  }
  expect(problems).toEqual([]);
});

test('README and the fixture format list every scope', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  expect(SCOPES.filter((scope) => !readme.includes(`\`${scope}\``))).toEqual([]);
  expect(SCOPES.filter((scope) => !doc.includes(`\`${scope}\``))).toEqual([]);
});
