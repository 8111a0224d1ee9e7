import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { createOrg } from './support/factories';
import { baseEnv, tempDir, type Exit } from './support/processes';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The SDK as its users get it: `npm pack` of sdk/ (its `prepack` builds it),
 * installed offline into a throw-away project outside the repository (the
 * SDK has no runtime dependency), imported by an ES module run on the pinned
 * Node against the service, and type-checked by the repository's tsc against
 * the installed declarations. The README's examples are compiled and run the
 * same way, each against an organization of its own.
 */
jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '..');
const SDK = join(ROOT, 'sdk');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const README_BLOCK = /^```ts\n([\s\S]*?)^```$/gm;

const work = tempDir('sdk-package');
const project = join(work, 'consumer');
// npm's cache of its own: nothing of the developer's (or another run's) is read or written
const npmFlags = ['--cache', join(work, 'npm-cache'), '--no-audit', '--no-fund', '--loglevel', 'error'];

/** Runs a command to its end (the kill is a bound for a hung child, not a speed check). */
function exec(command: string, args: string[], cwd: string, extraEnv: Record<string, string> = {}): Promise<Exit> {
  const child = spawn(command, args, { cwd, env: baseEnv(extraEnv), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
  return new Promise<Exit>((done) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    }),
  );
}

const write = (name: string, text: string) => writeFileSync(join(project, name), text);

/** `node`: Node's types from the repository (the README's examples use process.env); without them, as a browser project compiles */
function tsconfig(include: string[], options: { noEmit: boolean; node: boolean }): string {
  return JSON.stringify({
    compilerOptions: {
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'ES2022',
      lib: ['ES2023', 'DOM'],
      strict: true,
      // the installed declarations are checked too, as a consumer's strict build would
      skipLibCheck: false,
      typeRoots: [join(ROOT, 'node_modules', '@types')],
      types: options.node ? ['node'] : [],
      rootDir: '.',
      outDir: 'out',
      noEmit: options.noEmit,
    },
    include,
  });
}

let t: TestApp;
let baseUrl: string;
let packed: { filename: string; files: Array<{ path: string }> };

beforeAll(async () => {
  const pack = await exec('npm', ['pack', '--json', '--pack-destination', work, ...npmFlags], SDK);
  // stderr has the build's output
  expect({ code: pack.code, stderr: pack.stderr }).toMatchObject({ code: 0 });
  [packed] = JSON.parse(pack.stdout) as Array<typeof packed>;

  mkdirSync(project);
  write('package.json', JSON.stringify({ name: 'sdk-consumer', private: true, type: 'module' }));
  const install = await exec('npm', ['install', join(work, packed.filename), '--offline', '--ignore-scripts', ...npmFlags], project);
  expect({ code: install.code, stderr: install.stderr }).toEqual({ code: 0, stderr: '' });

  t = await createTestApp();
  await t.app.listen(0, '127.0.0.1');
  baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/api/v1`;
});
afterAll(async () => {
  await t?.close();
  rmSync(work, { recursive: true, force: true });
});

async function orgEnv() {
  const org = await createOrg(t.app);
  return { org, env: { AGENT_PLATFORM_API_KEY: org.token, AGENT_PLATFORM_BASE_URL: baseUrl } };
}

describe('npm pack of the SDK', () => {
  it('holds the built module, its declarations (the generated ones too), the README and nothing else', () => {
    expect(packed.files.map((file) => file.path).sort()).toEqual(['README.md', 'dist/generated/api-v1.d.ts', 'dist/index.d.ts', 'dist/index.js', 'package.json']);
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', '@agent-platform', 'sdk', 'package.json'), 'utf8'));
    expect(installed.dependencies ?? {}).toEqual({});
  });

  it('is imported by an ES module on the pinned Node and works against the service', async () => {
    write(
      'main.mjs',
      `import { AgentPlatformClient, ApiError } from '@agent-platform/sdk';
const client = new AgentPlatformClient({ apiKey: process.env.AGENT_PLATFORM_API_KEY, baseUrl: process.env.AGENT_PLATFORM_BASE_URL });
const created = await client.agents.create({ handle: 'packedAgent', name: 'Packed', instructions: 'x' });
const read = await client.agents.get(created.data.id);
const listed = await client.agents.list({ limit: 1 }).toArray();
const missing = await client.agents.get('agent_000000000000000000000000').catch((error) => error);
console.log(JSON.stringify({
  id: created.data.id,
  sameTag: read.etag === created.etag,
  listed: listed.map((agent) => agent.id),
  missing: missing instanceof ApiError ? [missing.status, missing.code] : String(missing),
}));
`,
    );
    const { org, env } = await orgEnv();
    const exit = await exec(process.execPath, ['main.mjs'], project, env);
    expect({ code: exit.code, stderr: exit.stderr }).toEqual({ code: 0, stderr: '' });
    const result = JSON.parse(exit.stdout);
    expect(result).toEqual({ id: expect.stringMatching(/^agent_/), sameTag: true, listed: [result.id], missing: [404, 'agent_not_found'] });
    await t.http.get(`/api/v1/agents/${result.id}`).set('Authorization', org.auth).expect(200);
  });

  it("type-checks against the installed declarations; a wrong call or an unknown error code does not compile", async () => {
    write(
      'consumer.mts',
      `import { AgentPlatformClient, ApiError, type Agent, type ApiResult, type KnownErrorCode } from '@agent-platform/sdk';
export async function rename(client: AgentPlatformClient, id: string, name: string): Promise<ApiResult<Agent>> {
  const { data, etag } = await client.agents.get(id);
  return client.agents.update(id, { name, tools: [...data.tools, { name: 'web_search' }] }, { ifMatch: etag ?? '*', maxRetries: 0 });
}
export const stale = (error: unknown): boolean => error instanceof ApiError && error.is('precondition_failed');
export const codes: KnownErrorCode[] = ['validation_failed', 'rate_limited'];
`,
    );
    write(
      'wrong.mts',
      `import { AgentPlatformClient, ApiError } from '@agent-platform/sdk';
export const misspelt = (error: ApiError): boolean => error.is('precondition_failled');
export const incomplete = (client: AgentPlatformClient) => client.agents.create({ name: 'No handle', instructions: 'x' });
`,
    );
    // no Node types: the declarations need only what browsers have too (fetch, AbortSignal)
    write('tsconfig.consumer.json', tsconfig(['consumer.mts'], { noEmit: true, node: false }));
    write('tsconfig.wrong.json', tsconfig(['wrong.mts'], { noEmit: true, node: false }));
    const ok = await exec(process.execPath, [TSC, '-p', 'tsconfig.consumer.json'], project);
    expect({ code: ok.code, out: ok.stdout }).toEqual({ code: 0, out: '' });
    const wrong = await exec(process.execPath, [TSC, '-p', 'tsconfig.wrong.json'], project);
    expect(wrong.code).toBe(2);
    const errors = wrong.stdout.split('\n').filter((line) => /error TS/.test(line));
    expect(errors).toEqual([expect.stringMatching(/^wrong\.mts\(2,.*'"precondition_failled"'/), expect.stringMatching(/^wrong\.mts\(3,.*error TS2345/)]);
  });
});

describe("the README's examples", () => {
  const readme = readFileSync(join(SDK, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(README_BLOCK)].map((match) => match[1]);

  it('are there, and every one type-checks against the installed package', async () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    blocks.forEach((block, index) => write(`readme-${index + 1}.mts`, block));
    write('tsconfig.readme.json', tsconfig(['readme-*.mts'], { noEmit: false, node: true }));
    const compiled = await exec(process.execPath, [TSC, '-p', 'tsconfig.readme.json'], project);
    expect({ code: compiled.code, out: compiled.stdout }).toEqual({ code: 0, out: '' });
  });

  it.each(blocks.map((_, index) => index + 1))('example %i runs against the service', async (index) => {
    const script = join(project, 'out', `readme-${index}.mjs`);
    expect(existsSync(script)).toBe(true);
    const { env } = await orgEnv();
    const exit = await exec(process.execPath, [script], project, env);
    expect({ code: exit.code, stderr: exit.stderr }).toEqual({ code: 0, stderr: '' });
    expect(exit.stdout).not.toBe('');
  });
});
