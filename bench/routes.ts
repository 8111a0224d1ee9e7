/**
 * The main paths the benchmark measures, plus GET /org, which
 * the backbone already serves. Each request varies (ids, handles) the way a
 * real client's would.
 */
export interface BenchContext {
  token: string;
  orgId: string;
  agentIds: string[];
  filterAgentId: string;
  /** distinguishes the handles one run creates from another's */
  runTag: string;
}

export interface BenchPath {
  name: string;
  method: 'GET' | 'POST' | 'PATCH';
  /** point read, list, filtered list, or write: what the targets apply to */
  kind: 'point' | 'list' | 'filtered' | 'write';
  path(ctx: BenchContext, n: number): string;
  body?(ctx: BenchContext, n: number): string;
}

const pick = (ids: string[], n: number) => ids[(n * 7919) % ids.length];

export const BENCH_PATHS: BenchPath[] = [
  { name: 'GET /agents/{id}', method: 'GET', kind: 'point', path: (c, n) => `/api/v1/agents/${pick(c.agentIds, n)}` },
  { name: 'GET /agents', method: 'GET', kind: 'list', path: () => '/api/v1/agents' },
  // no filter: a named statement on PostgreSQL (planned once); agent_id&source: unnamed, planned with its values
  { name: 'GET /conversations', method: 'GET', kind: 'list', path: () => '/api/v1/conversations' },
  {
    name: 'GET /conversations?agent_id&source',
    method: 'GET',
    kind: 'filtered',
    path: (c) => `/api/v1/conversations?agent_id=${c.filterAgentId}&source=dashboard`,
  },
  {
    name: 'POST /agents',
    method: 'POST',
    kind: 'write',
    path: () => '/api/v1/agents',
    body: (c, n) => JSON.stringify({ handle: `bench${c.runTag}n${n}`, name: `Bench ${n}`, instructions: 'Answer politely.' }),
  },
  {
    name: 'PATCH /agents/{id}',
    method: 'PATCH',
    kind: 'write',
    path: (c, n) => `/api/v1/agents/${pick(c.agentIds, n)}`,
    body: (_c, n) => JSON.stringify({ name: `Renamed ${n}` }),
  },
  { name: 'GET /org', method: 'GET', kind: 'point', path: () => '/api/v1/org' },
];
