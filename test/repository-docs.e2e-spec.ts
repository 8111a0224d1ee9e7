import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { idKinds } from '../libs/ids/ids';
import { SCOPES } from '../src/auth/scopes';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { FixtureRegistry } from '../src/fixtures/fixture-registry';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The repository stands alone and its docs stay true: README and docs/ point
 * only at files that exist in it; the fixture format's example loads and
 * every registered section is documented; the scopes are not copied.
 */
const ROOT = resolve(__dirname, '..');
const doc = readFileSync(join(ROOT, 'docs', 'fixture-format.md'), 'utf8');
const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** The text of `docs/fixture-format.md` from a heading line starting with `start` up to the next heading of that level or higher. */
function part(start: string): string {
  const from = doc.indexOf(`\n${start}`);
  if (from === -1) return '';
  const level = /^#+/.exec(start)![0].length;
  const rest = doc.slice(from + 1);
  const end = rest.slice(1).search(new RegExp(`\n#{1,${level}} `));
  return end === -1 ? rest : rest.slice(0, end + 1);
}

describe('the fixture format documents every registered section', () => {
  test('every section has its own heading, and its field table names every field its demo rows use', () => {
    const sections = t.app.get(FixtureRegistry).ordered();
    expect(sections.length).toBeGreaterThan(5);
    const problems: string[] = [];
    for (const section of sections) {
      const text = part(`### \`${section.name}[]\``);
      if (text === '') {
        problems.push(`docs/fixture-format.md has no heading "### \`${section.name}[]\`"`);
        continue;
      }
      if (!/\n\| field \| rule \| default \|/.test(text)) problems.push(`${section.name}[]: no field table (| field | rule | default |)`);
      const rows = section.demoFile ? (JSON.parse(readFileSync(join(ROOT, section.demoFile), 'utf8')) as Array<Record<string, unknown>>) : [];
      const fields = [...new Set(rows.flatMap((row) => Object.keys(row)))];
      for (const field of fields.filter((name) => !text.includes(`\`${name}\``))) problems.push(`${section.name}[]: its demo rows use \`${field}\`, which its table does not document`);
    }
    expect(problems).toEqual([]);
  });

  test('the write order lists every section at its place: one numbered item per order value, lowest first', () => {
    const sections = t.app.get(FixtureRegistry).ordered();
    const items = [...part('## Write order and references').matchAll(/^\d+\. (.*)$/gm)].map((match) => match[1]);
    const orders = [...new Set(sections.map((section) => section.order))];
    expect({ items: items.length }).toEqual({ items: orders.length });
    const misplaced = sections
      .filter((section) => !items[orders.indexOf(section.order)]?.includes(`\`${section.name}\``))
      .map((section) => `\`${section.name}\` (order ${section.order}) belongs in item ${orders.indexOf(section.order) + 1} of "Write order and references"`);
    expect(misplaced).toEqual([]);
  });

  test('the id table names every id prefix (libs/ids/ids.ts and the modules\' declareIdKind)', () => {
    const table = part('## Ids');
    // the app is loaded (beforeAll): its modules have declared their kinds
    const missing = [...idKinds()]
      .filter(([, prefix]) => !table.includes(`\`${prefix}_\``))
      .map(([kind, prefix]) => `id kind ${kind}: add \`${prefix}_\` to the table under "## Ids" in docs/fixture-format.md`);
    expect(missing).toEqual([]);
  });
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

test('README and docs/ link only to files of the repository', () => {
  const problems: string[] = [];
  for (const page of pages) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // a URL (http://localhost…)
      if (!existsSync(resolve(dirname(join(ROOT, page)), target))) problems.push(`${page} links to ${target}, which is not in the repository`);
    }
  }
  expect(problems).toEqual([]);
});

/** Every text file under these folders (and README.md), as repository-relative paths. */
function filesUnder(...folders: string[]): string[] {
  const found: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(join(ROOT, relative), { withFileTypes: true })) {
      const path = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|js|cjs|mjs|json|md|sh|sql|yaml|yml)$/.test(entry.name) && statSync(join(ROOT, path)).size < 2_000_000) found.push(path);
    }
  };
  folders.filter((folder) => existsSync(join(ROOT, folder))).forEach(walk);
  return ['README.md', ...found];
}

/**
 * What a reader of the repository cannot follow: documents kept elsewhere,
 * and the numbers of the issues a change came from. A comment states the
 * rule itself; a decision is written in docs/decisions.md under a heading of
 * its own.
 */
const OUTSIDE_REFERENCES: Array<[RegExp, string]> = [
  [/\boperations\.md\b|\bapi-v1\.md\b|\bSTYLE\.md\b/, 'a document outside the repository'],
  [/(?<![\w.-])shared\//, 'a folder outside the repository'],
  // the contract document by name, built so that this line does not name it
  [new RegExp(`(?<![\\w.-])${'sp' + 'ec'}(?![\\w-]|\\.ts)`, 'i'), 'the contract document by name: state the rule itself'],
  [/\/work\//, 'a path outside the repository'],
  [/\bissues? #?\d+/i, 'an issue number'],
  [/(?<!RFC \d+ )§\s?\d/, 'a section number of a document outside the repository'],
];

test('no file of src/, test/, scripts/, docs/, libs/ or bench/ refers to documents outside the repository or to issue numbers', () => {
  const files = filesUnder('src', 'test', 'scripts', 'docs', 'libs', 'bench');
  expect(files.length).toBeGreaterThan(100);
  const problems: string[] = [];
  for (const path of files) {
    readFileSync(join(ROOT, path), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        for (const [pattern, what] of OUTSIDE_REFERENCES) {
          const match = pattern.exec(line);
          if (match) problems.push(`${path}:${index + 1} names ${what}: "${match[0]}"`);
        }
      });
  }
  expect(problems).toEqual([]);
});

test('the scopes are listed once (SCOPES): the docs state the naming rule every scope follows and hold no copy that could drift', () => {
  expect(SCOPES.filter((scope) => !/^[a-z_]+:(read|write|delete)$/.test(scope))).toEqual([]);
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  expect(readme).toContain('`<resource>:read`');
  // a few named as examples, never the list
  expect(SCOPES.filter((scope) => readme.includes(`\`${scope}\``)).length).toBeLessThan(4);
  expect(SCOPES.filter((scope) => doc.includes(`\`${scope}\``)).length).toBeLessThan(4);
});
