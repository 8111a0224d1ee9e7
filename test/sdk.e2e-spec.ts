import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { AgentPlatformClient, ApiError, ConnectionError, type Agent, type AgentCreate } from '../sdk/src/index';
import { createOrg, type TestOrg } from './support/factories';
import { recordStatus } from './support/status-recorder';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The SDK against the real service, in-process, through a proxy that injects
 * the faults the retry guidance is about: a 503 before forwarding, a
 * connection dropped after the service answered (so the write is
 * committed), a 429 with Retry-After. Waits are counted, not timed: the
 * client's `sleep` records each one.
 */
type Fault = 'pass' | '503' | 'drop-after-commit' | { status: 429; retryAfter: string };

interface Seen {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  ifMatch: string | undefined;
  fault: Fault;
}

class FaultProxy {
  readonly seen: Seen[] = [];
  private faults: Fault[] = [];
  private server!: Server;

  constructor(private readonly upstreamPort: number) {}

  /** The faults the next requests meet, one each, in order; then requests pass. */
  plan(...faults: Fault[]): void {
    this.faults = faults;
  }

  async start(): Promise<number> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const fault = this.faults.shift() ?? 'pass';
    const header = (name: string) => req.headers[name] as string | undefined;
    this.seen.push({ method: req.method!, path: req.url!, idempotencyKey: header('idempotency-key'), ifMatch: header('if-match'), fault });
    if (fault === '503') {
      req.resume();
      res.writeHead(503, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { code: 'service_unavailable', message: 'injected', request_id: null } }));
      return;
    }
    if (typeof fault === 'object') {
      req.resume();
      res
        .writeHead(fault.status, { 'Content-Type': 'application/json', 'Retry-After': fault.retryAfter, 'X-RateLimit-Limit': '10', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '1700000000' })
        .end(JSON.stringify({ error: { code: 'rate_limited', message: 'injected', request_id: 'req_injected' } }));
      return;
    }
    const upstream = httpRequest({ host: '127.0.0.1', port: this.upstreamPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        recordStatus({ method: req.method!, path: req.url!, status: answer.statusCode! });
        // the service has answered (its write committed): the client never hears it
        if (fault === 'drop-after-commit') return void req.socket.destroy();
        res.writeHead(answer.statusCode!, answer.headers).end(Buffer.concat(chunks));
      });
    });
    req.pipe(upstream);
  }
}

let t: TestApp;
let org: TestOrg;
let proxy: FaultProxy;
let baseUrl: string;
const waits: number[] = [];

function client(options: Partial<ConstructorParameters<typeof AgentPlatformClient>[0]> = {}) {
  return new AgentPlatformClient({
    apiKey: org.token,
    baseUrl,
    random: () => 0.5,
    sleep: async (ms) => void waits.push(ms),
    ...options,
  });
}

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen(0, '127.0.0.1');
  org = await createOrg(t.app);
  proxy = new FaultProxy((t.app.getHttpServer().address() as AddressInfo).port);
  baseUrl = `http://127.0.0.1:${await proxy.start()}/api/v1`;
});
afterAll(async () => {
  await proxy.stop();
  await t.close();
});
beforeEach(() => {
  waits.length = 0;
  proxy.seen.length = 0;
  proxy.plan();
});

const handle = () => `sdk${randomUUID().replace(/-/g, '').slice(0, 12)}`;

async function agentsWithHandle(value: string): Promise<Agent[]> {
  const found: Agent[] = [];
  for await (const agent of client().agents.list({ limit: 100 })) if (agent.handle === value) found.push(agent);
  return found;
}

describe('retries follow the guidance, and a retried create exists exactly once', () => {
  it('503, a connection dropped after the commit, then 429 with Retry-After: one agent, one key on every attempt', async () => {
    proxy.plan('503', 'drop-after-commit', { status: 429, retryAfter: '2' });
    const value = handle();
    const created = await client({ maxRetries: 3 }).agents.create({ handle: value, name: 'Retried', instructions: 'x' });
    expect(created.status).toBe(201);
    // the last attempt found the committed write's record: the stored answer, replayed
    expect(created.replayed).toBe(true);
    expect(created.etag).toMatch(/^"/);
    expect(proxy.seen.map((s) => s.fault)).toEqual(['503', 'drop-after-commit', { status: 429, retryAfter: '2' }, 'pass']);
    const keys = new Set(proxy.seen.map((s) => s.idempotencyKey));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(await agentsWithHandle(value)).toHaveLength(1);
    // full jitter with random() = 0.5: half of 500 × 2^attempt; Retry-After: 2 s exactly
    expect(waits).toEqual([250, 500, 2000]);
  });

  it('a key the caller gives is sent as is', async () => {
    proxy.plan('503');
    const key = `mine-${randomUUID()}`;
    await client().agents.create({ handle: handle(), name: 'Keyed', instructions: 'x' }, { idempotencyKey: key });
    expect(proxy.seen.map((s) => s.idempotencyKey)).toEqual([key, key]);
  });

  it('gives up after maxRetries (per client, per call) and throws the last answer as a typed error with its rate limit', async () => {
    proxy.plan({ status: 429, retryAfter: '1' }, { status: 429, retryAfter: '1' }, { status: 429, retryAfter: '1' });
    const error = await client().org.get().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', requestId: 'req_injected', rateLimit: { limit: 10, remaining: 0, reset: 1700000000, retryAfter: 1 } });
    expect((error as ApiError).is('rate_limited')).toBe(true);
    expect(proxy.seen).toHaveLength(3);

    proxy.seen.length = 0;
    proxy.plan('503', '503');
    await expect(client().org.get({ maxRetries: 0 })).rejects.toMatchObject({ status: 503 });
    expect(proxy.seen).toHaveLength(1);
  });

  it('a Retry-After longer than the client waits (maxRetryAfterMs) is not waited for: the 429 is thrown at once', async () => {
    proxy.plan({ status: 429, retryAfter: '120' });
    await expect(client().org.get()).rejects.toMatchObject({ status: 429, rateLimit: { retryAfter: 120 } });
    proxy.plan({ status: 429, retryAfter: '120' });
    await client({ maxRetryAfterMs: 180_000 }).org.get();
    expect(proxy.seen).toHaveLength(3);
    expect(waits).toEqual([120_000]);
  });

  it('a connection that fails on every attempt ends in a ConnectionError', async () => {
    const dead = new AgentPlatformClient({ apiKey: org.token, baseUrl: 'http://127.0.0.1:1/api/v1', sleep: async (ms) => void waits.push(ms), random: () => 0 });
    await expect(dead.org.get()).rejects.toBeInstanceOf(ConnectionError);
    expect(waits).toEqual([0, 0]);
  });

  it('no 4xx is retried: 422 with its field errors, 404 with its code, both after one request', async () => {
    const invalid = (await client().agents.create({ handle: '1-not-valid', name: 'x', instructions: 'x' }).catch((e: unknown) => e)) as ApiError;
    expect(invalid).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(Object.keys(invalid.fieldErrors ?? {})).toContain('handle');
    expect(invalid.requestId).toMatch(/^req_/);
    const missing = (await client().agents.get('agent_000000000000000000000000').catch((e: unknown) => e)) as ApiError;
    expect(missing.is('agent_not_found')).toBe(true);
    expect(proxy.seen).toHaveLength(2);
    expect(waits).toEqual([]);
  });
});

describe('pagination', () => {
  it('a list walked through faults yields every item exactly once, with the same filters on every page', async () => {
    const own = await createOrg(t.app);
    const sdk = client({ apiKey: own.token });
    const handles = Array.from({ length: 7 }, handle);
    for (const value of handles) await sdk.agents.create({ handle: value, name: value, instructions: 'x' });
    proxy.seen.length = 0;
    proxy.plan('503', 'pass', 'drop-after-commit', 'pass', { status: 429, retryAfter: '0' });
    const walked: string[] = [];
    for await (const agent of sdk.agents.list({ limit: 2 })) walked.push(agent.handle);
    expect(walked.sort()).toEqual([...handles].sort());
    expect(proxy.seen.every((s) => s.path.includes('limit=2'))).toBe(true);

    const pages: number[] = [];
    for await (const page of sdk.agents.list({ limit: 3 }).pages()) pages.push(page.data.length);
    expect(pages).toEqual([3, 3, 1]);
  });
});

describe('conditional edits and what every answer tells', () => {
  it('update with ifMatch: the ETag of what was read, 412 once it changed', async () => {
    const sdk = client();
    const { data: agent, etag, requestId, rateLimit } = await sdk.agents.create({ handle: handle(), name: 'Edited', instructions: 'x' });
    expect(requestId).toMatch(/^req_/);
    expect(rateLimit.remaining).toEqual(expect.any(Number));
    const first = await sdk.agents.update(agent.id, { name: 'One' }, { ifMatch: etag! });
    expect(proxy.seen.at(-1)!.ifMatch).toBe(etag);
    const stale = (await sdk.agents.update(agent.id, { name: 'Two' }, { ifMatch: etag! }).catch((e: unknown) => e)) as ApiError;
    expect(stale).toMatchObject({ status: 412, code: 'precondition_failed' });
    const reread = await sdk.agents.get(agent.id);
    expect(reread.etag).toBe(first.etag);
    await sdk.agents.update(agent.id, { name: 'Two' }, { ifMatch: reread.etag! });
  });

  it('a per-call timeout aborts a hanging attempt, and the caller can abort', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopped by the caller'));
    await expect(client().org.get({ signal: controller.signal })).rejects.toThrow('stopped by the caller');
    let attempts = 0;
    const hanging = new AgentPlatformClient({
      apiKey: org.token,
      baseUrl,
      maxRetries: 1,
      timeoutMs: 50,
      sleep: async () => undefined,
      fetch: (_input, init) => {
        attempts += 1;
        return new Promise((_resolve, reject) => init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason)));
      },
    });
    await expect(hanging.org.get()).rejects.toMatchObject({ name: 'TimeoutError' });
    // a timed-out attempt is retried like a failed connection
    expect(attempts).toBe(2);
  });

  it('conversation filters, metadata in bracket form', async () => {
    await client().conversations.list({ source: 'embed', is_simulation: false, metadata: { ticketId: 'T-1' } }).toArray();
    expect(proxy.seen.at(-1)!.path).toContain('source=embed&is_simulation=false&metadata%5BticketId%5D=T-1');
  });
});

describe('every operation of the served document', () => {
  const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

  /**
   * The SDK method of an operation, by rule: the group is the path's first
   * segment in camelCase (`/custom_tools` → `customTools`; `/` and
   * `/openapi.json` → `meta`), the method is the operationId without the
   * group's noun (`listConversationMessages` → `conversations.listMessages`,
   * `getAgentAnalytics` → `analytics.getAgent`, `getCustomTool` →
   * `customTools.get`). The names that predate the rule:
   */
  const NAMED_BEFORE_THE_RULE: Record<string, string> = {
    getBanner: 'meta.banner',
    getOpenApiDocument: 'meta.openapi',
    listTeamMembers: 'team.list',
  };
  function sdkMethodOf(operationId: string, path: string): string {
    if (operationId in NAMED_BEFORE_THE_RULE) return NAMED_BEFORE_THE_RULE[operationId];
    const segment = path.split('/')[1] ?? '';
    const group = segment === '' || segment.includes('.') ? 'meta' : segment.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
    const noun = group[0].toUpperCase() + group.slice(1);
    const singular = noun.replace(/s$/, '');
    const [, verb, rest] = /^([a-z]+)(.*)$/.exec(operationId)!;
    const name = rest.includes(noun) ? rest.replace(noun, '') : rest.replace(singular, '');
    return `${group}.${verb}${name}`;
  }

  it('has a method by rule: each, called with the documented example, reaches its operation', async () => {
    const sdk = client({ apiKey: (await createOrg(t.app)).token });
    type Operation = { operationId: string; parameters?: Array<{ in: string; name: string; schema?: { pattern?: string } }>; requestBody?: { content: Record<string, { examples?: Record<string, { value: unknown }> }> } };
    const doc = (await sdk.meta.openapi()) as { paths: Record<string, Record<string, Operation>> };
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
    );
    // creates first (their rows are the targets of the id-taking calls), deletes last
    const order = (method: string) => ['POST', 'GET', 'PUT', 'PATCH', 'DELETE'].indexOf(method);
    operations.sort((a, b) => order(a.method) - order(b.method));
    const created = new Map<string, string>();
    const problems: string[] = [];
    for (const { method, path, operation } of operations) {
      const name = sdkMethodOf(operation.operationId, path);
      const [group, member] = name.split('.');
      const call = (sdk as unknown as Record<string, Record<string, ((...args: unknown[]) => unknown) | undefined> | undefined>)[group]?.[member];
      if (typeof call !== 'function') {
        problems.push(`${operation.operationId} (${method} ${path}): add ${name} to sdk/src/index.ts`);
        continue;
      }
      // a path id: the row the collection's POST made, or a well-formed id of its pattern that this organization does not have (404)
      const ids = (operation.parameters ?? []).filter((parameter) => parameter.in === 'path');
      const collection = path.replace(/\/\{[^}]+\}.*$/, '');
      const madeUp = ids.some(() => !created.has(collection));
      const args: unknown[] = ids.map((parameter) => created.get(collection) ?? /^\^\(?([a-z]+)_/.exec(parameter.schema?.pattern ?? '')?.[1] + '_000000000000000000000000');
      const example = Object.values(operation.requestBody?.content['application/json']?.examples ?? {})[0]?.value;
      if (operation.requestBody) args.push(example);
      proxy.seen.length = 0;
      try {
        const result = call(...args) as Promise<unknown> | { toArray(): Promise<unknown> };
        await ('toArray' in result ? result.toArray() : result).then((answer) => {
          const id = (answer as { data?: { id?: unknown } } | undefined)?.data?.id;
          if (method === 'POST' && typeof id === 'string') created.set(path, id);
        });
      } catch (error) {
        if (!(madeUp && error instanceof ApiError && error.status === 404)) problems.push(`${operation.operationId} (${name}): ${(error as Error).message}`);
      }
      const pattern = new RegExp(`^/api/v1${path.replace(/\{[^}]+\}/g, '[^/]+')}(\\?.*)?$`);
      if (!proxy.seen.some((seen) => seen.method === method && pattern.test(seen.path))) problems.push(`${operation.operationId}: ${name} did not send ${method} ${path}`);
    }
    expect(problems).toEqual([]);
    // the document is read, not empty: the check above is over every operation it has
    expect(operations.map(({ operation }) => operation.operationId)).toEqual(expect.arrayContaining(['listAgents', 'createAgent', 'deleteCustomTool', 'listConversationMessages']));
  });

  it('AgentCreate (the generated type) compiles exactly the create bodies the service accepts', async () => {
    const sdk = client();
    // npm run typecheck fails while a body marked @ts-expect-error compiles
    const accepted: AgentCreate[] = [
      { handle: handle(), name: 'Plain', instructions: 'x' },
      { handle: handle(), name: 'Html', instructions_html: '<p>x</p>' },
      { handle: handle(), name: 'Both', instructions: 'x', instructions_html: '<p>x</p>' },
    ];
    // @ts-expect-error neither instructions nor instructions_html
    const neither: AgentCreate = { handle: handle(), name: 'Neither' };
    // @ts-expect-error no handle
    const noHandle: AgentCreate = { name: 'No handle', instructions: 'x' };
    // @ts-expect-error instructions of the wrong type
    const wrongType: AgentCreate = { handle: handle(), name: 'Wrong', instructions: 1 };
    for (const body of accepted) expect((await sdk.agents.create(body)).status).toBe(201);
    for (const body of [neither, noHandle, wrongType]) await expect(sdk.agents.create(body)).rejects.toMatchObject({ status: 422, code: 'validation_failed' });
  });
});

describe('the agent analytics, a paged resource', () => {
  it("listAgentDays walks every day of the window through faults, once each, the window sent with every page", async () => {
    const sdk = client();
    const { data: agent } = await sdk.agents.create({ handle: handle(), name: 'Counted', instructions: 'x' });
    proxy.seen.length = 0;
    proxy.plan('pass', '503');
    const window = { since: '2026-01-01T00:00:00.000Z', until: '2026-01-20T00:00:00.000Z', limit: 8 };
    const days = await sdk.analytics.listAgentDays(agent.id, window).toArray();
    expect(days.map((day) => day.date)).toEqual(Array.from({ length: 20 }, (_, i) => `2026-01-${String(20 - i).padStart(2, '0')}`));
    // 3 pages, the second one retried
    expect(proxy.seen).toHaveLength(4);
    expect(proxy.seen.every((s) => s.path.includes('since=2026-01-01') && s.path.includes('limit=8'))).toBe(true);
  });
});
