/**
 * The Agent Platform REST API v1 client. It follows the API's retry
 * guidance: 429, 5xx and network errors (connection reset, timeout) are
 * retried with exponential backoff and full jitter, `Retry-After` honoured;
 * every POST and PATCH carries an `Idempotency-Key` (the caller's, or one made
 * here), the same on every retry of the call, so a retried write runs once.
 * Other 4xx are never retried. Runs on the platform's `fetch` (Node 20+,
 * browsers); no runtime dependency.
 */
import type { components, paths } from './generated/api-v1.js';

type Schemas = components['schemas'];
export type Agent = Schemas['AgentDto'];
export type AgentUpdate = Schemas['AgentUpdateDto'];
/** The create body: `handle`, `name`, and `instructions` or `instructions_html` (or both) required. */
export type AgentCreate = Schemas['AgentCreateDto'];
export type CustomTool = Schemas['CustomToolDto'];
export type CustomToolCreate = Schemas['CustomToolCreateDto'];
export type CustomToolUpdate = Schemas['CustomToolUpdateDto'];
export type Source = Schemas['SourceDto'];
export type SourceCreate = Schemas['SourceCreateDto'];
export type ConnectorSummary = Schemas['ConnectorSummaryDto'];
export type ConnectorDetail = Schemas['ConnectorDetailDto'];
export type ConversationSummary = Schemas['ConversationSummaryDto'];
export type ConversationDetail = Schemas['ConversationDetailDto'];
export type Message = Schemas['MessageDto'];
export type Trigger = Schemas['TriggerDto'];
export type Chatbot = Schemas['ChatbotDto'];
export type Member = Schemas['MemberDto'];
export type Org = Schemas['OrgDto'];
export type AgentAnalytics = Schemas['AgentAnalyticsDto'];
export type AnalyticsDay = Schemas['AnalyticsDayDto'];
export type DeleteAcknowledgement = Schemas['DeleteAcknowledgementDto'];
export type Banner = Schemas['BannerDto'];
/** The error codes the API description names; the list is open, so `error.code` is any string. */
export type KnownErrorCode = Schemas['ErrorCode'];

type Query<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;
/** Filters of a list, without the cursor (pagination follows it). */
type ListQuery<P extends keyof paths> = Omit<Query<P>, 'cursor'>;
export type ConversationListQuery = ListQuery<'/conversations'> & {
  /** exact match on metadata keys, sent as `metadata[KEY]=value` */
  metadata?: Record<string, string>;
};

export interface ClientOptions {
  apiKey: string;
  /** e.g. `https://api.example.com/api/v1` */
  baseUrl: string;
  /** retries after the first attempt; default 2 */
  maxRetries?: number;
  /** per attempt, in ms; default 60 000 */
  timeoutMs?: number;
  /** first backoff ceiling in ms, doubled per retry; default 500 */
  initialRetryDelayMs?: number;
  /** largest backoff ceiling in ms; default 8000 */
  maxRetryDelayMs?: number;
  /** a `Retry-After` longer than this (ms) is not waited for: the error is thrown; default 60 000 */
  maxRetryAfterMs?: number;
  fetch?: typeof fetch;
  /** how the client waits between attempts (tests count the waits) */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** a number in [0, 1) for the jitter; default Math.random */
  random?: () => number;
}

export interface RequestOptions {
  /** overrides the client's */
  maxRetries?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** POST and PATCH: used as is; one is made when absent */
  idempotencyKey?: string;
  /** PATCH and DELETE: change only if the resource still has this ETag (else 412 `precondition_failed`) */
  ifMatch?: string;
  headers?: Record<string, string>;
}

export interface RateLimit {
  limit: number | null;
  remaining: number | null;
  /** Unix epoch seconds */
  reset: number | null;
  /** seconds, on a 429 */
  retryAfter: number | null;
}

/** One answer: its `data` and what its headers say. */
export interface ApiResult<T> {
  data: T;
  status: number;
  /** the resource's entity tag (single resources): pass it as `ifMatch` */
  etag: string | null;
  requestId: string | null;
  rateLimit: RateLimit;
  /** an idempotent replay of an earlier attempt */
  replayed: boolean;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
  requestId: string | null;
  rateLimit: RateLimit;
}

/** An answer with an error status, after the retries the guidance allows. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly code: KnownErrorCode | (string & {});
  readonly requestId: string | null;
  /** for 422 `validation_failed`: field path → problems */
  readonly fieldErrors: Record<string, string[]> | null;
  readonly details: Record<string, unknown> | null;
  readonly rateLimit: RateLimit;

  constructor(status: number, body: { code?: string; message?: string; request_id?: string | null; details?: Record<string, unknown> } | null, headers: Headers) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? 'unknown';
    this.requestId = body?.request_id ?? headers.get('x-request-id');
    this.details = body?.details ?? null;
    this.fieldErrors = (this.details?.fields as Record<string, string[]> | undefined) ?? null;
    this.rateLimit = rateLimitOf(headers);
  }

  /** Branch on a code the API description names (checked by TypeScript). */
  is(code: KnownErrorCode): boolean {
    return this.code === code;
  }
}

/** No answer: the connection failed or the attempt timed out, on every attempt. */
export class ConnectionError extends Error {
  override readonly name: string = 'ConnectionError';
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}

export class TimeoutError extends ConnectionError {
  override readonly name = 'TimeoutError';
}

/** Items of a list, fetched page by page as they are iterated; `pages()` gives the pages. */
export class PageIterator<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>) {}

  async *pages(): AsyncGenerator<Page<T>> {
    let cursor: string | undefined;
    do {
      const page = await this.fetchPage(cursor);
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item, in order (a whole list in memory: mind its size). */
  async toArray(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}

function numberHeader(headers: Headers, name: string): number | null {
  const value = headers.get(name);
  return value === null || value.trim() === '' || !Number.isFinite(Number(value)) ? null : Number(value);
}

function rateLimitOf(headers: Headers): RateLimit {
  return {
    limit: numberHeader(headers, 'x-ratelimit-limit'),
    remaining: numberHeader(headers, 'x-ratelimit-remaining'),
    reset: numberHeader(headers, 'x-ratelimit-reset'),
    retryAfter: numberHeader(headers, 'retry-after'),
  };
}

/** `Retry-After` in ms: delay-seconds or an HTTP date; null when absent or unreadable. */
function retryAfterMs(headers: Headers, now: number): number | null {
  const value = headers.get('retry-after');
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function queryString(query: Record<string, unknown> | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    if (typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date)) {
      // the API's deepObject form: metadata[ticketId]=T-1
      for (const [key, inner] of Object.entries(value as Record<string, unknown>)) if (inner !== undefined) params.append(`${name}[${key}]`, String(inner));
    } else {
      params.append(name, value instanceof Date ? value.toISOString() : String(value));
    }
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
}

interface Envelope<T> {
  data: T;
  meta?: { request_id?: string | null; next_cursor?: string | null };
}

const encode = encodeURIComponent;

export class AgentPlatformClient {
  private readonly options: Required<Omit<ClientOptions, 'fetch'>> & { fetch: typeof fetch };

  constructor(options: ClientOptions) {
    this.options = {
      maxRetries: 2,
      timeoutMs: 60_000,
      initialRetryDelayMs: 500,
      maxRetryDelayMs: 8000,
      maxRetryAfterMs: 60_000,
      sleep: defaultSleep,
      random: Math.random,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    };
  }

  readonly agents = {
    list: (query?: ListQuery<'/agents'>, options?: RequestOptions) => this.list<Agent>('/agents', query, options),
    create: (body: AgentCreate, options?: RequestOptions) => this.request<Agent>({ method: 'POST', path: '/agents', body }, options),
    get: (id: string, options?: RequestOptions) => this.request<Agent>({ method: 'GET', path: `/agents/${encode(id)}` }, options),
    update: (id: string, body: AgentUpdate, options?: RequestOptions) => this.request<Agent>({ method: 'PATCH', path: `/agents/${encode(id)}`, body }, options),
    delete: (id: string, options?: RequestOptions) => this.request<DeleteAcknowledgement>({ method: 'DELETE', path: `/agents/${encode(id)}` }, options),
  };

  readonly customTools = {
    list: (query?: ListQuery<'/custom_tools'>, options?: RequestOptions) => this.list<CustomTool>('/custom_tools', query, options),
    create: (body: CustomToolCreate, options?: RequestOptions) => this.request<CustomTool>({ method: 'POST', path: '/custom_tools', body }, options),
    get: (id: string, options?: RequestOptions) => this.request<CustomTool>({ method: 'GET', path: `/custom_tools/${encode(id)}` }, options),
    update: (id: string, body: CustomToolUpdate, options?: RequestOptions) =>
      this.request<CustomTool>({ method: 'PATCH', path: `/custom_tools/${encode(id)}`, body }, options),
    delete: (id: string, options?: RequestOptions) => this.request<DeleteAcknowledgement>({ method: 'DELETE', path: `/custom_tools/${encode(id)}` }, options),
  };

  readonly sources = {
    list: (query?: ListQuery<'/sources'>, options?: RequestOptions) => this.list<Source>('/sources', query, options),
    create: (body: SourceCreate, options?: RequestOptions) => this.request<Source>({ method: 'POST', path: '/sources', body }, options),
    get: (id: string, options?: RequestOptions) => this.request<Source>({ method: 'GET', path: `/sources/${encode(id)}` }, options),
    delete: (id: string, options?: RequestOptions) => this.request<DeleteAcknowledgement>({ method: 'DELETE', path: `/sources/${encode(id)}` }, options),
  };

  readonly connectors = {
    list: (query?: ListQuery<'/connectors'>, options?: RequestOptions) => this.list<ConnectorSummary>('/connectors', query, options),
    get: (id: string, options?: RequestOptions) => this.request<ConnectorDetail>({ method: 'GET', path: `/connectors/${encode(id)}` }, options),
  };

  readonly conversations = {
    list: (query?: ConversationListQuery, options?: RequestOptions) => this.list<ConversationSummary>('/conversations', query, options),
    get: (id: string, query?: Query<'/conversations/{id}'>, options?: RequestOptions) =>
      this.request<ConversationDetail>({ method: 'GET', path: `/conversations/${encode(id)}`, query }, options),
    listMessages: (id: string, query?: ListQuery<'/conversations/{id}/messages'>, options?: RequestOptions) =>
      this.list<Message>(`/conversations/${encode(id)}/messages`, query, options),
  };

  readonly triggers = {
    list: (query?: ListQuery<'/triggers'>, options?: RequestOptions) => this.list<Trigger>('/triggers', query, options),
    get: (id: string, options?: RequestOptions) => this.request<Trigger>({ method: 'GET', path: `/triggers/${encode(id)}` }, options),
  };

  readonly chatbots = {
    list: (query?: ListQuery<'/chatbots'>, options?: RequestOptions) => this.list<Chatbot>('/chatbots', query, options),
    get: (id: string, options?: RequestOptions) => this.request<Chatbot>({ method: 'GET', path: `/chatbots/${encode(id)}` }, options),
  };

  readonly team = {
    /** not paginated */
    list: (options?: RequestOptions) => this.request<Member[]>({ method: 'GET', path: '/team' }, options),
  };

  readonly analytics = {
    /** the window's totals and the first page of its daily series (`listAgentDays` walks all of it) */
    getAgent: (agentId: string, query?: Query<'/analytics/agents/{agent_id}'>, options?: RequestOptions) =>
      this.request<AgentAnalytics>({ method: 'GET', path: `/analytics/agents/${encode(agentId)}`, query }, options),
    /** every day of the window's daily series (newest first), page after page, for the same window */
    listAgentDays: (agentId: string, query?: ListQuery<'/analytics/agents/{agent_id}'>, options?: RequestOptions) =>
      this.pages<AgentAnalytics, AnalyticsDay>(`/analytics/agents/${encode(agentId)}`, query, options, (data) => data.daily),
  };

  readonly org = {
    get: (options?: RequestOptions) => this.request<Org>({ method: 'GET', path: '/org' }, options),
  };

  readonly meta = {
    banner: (options?: RequestOptions) => this.request<Banner>({ method: 'GET', path: '/' }, options),
    /** the OpenAPI document, as served */
    openapi: async (options?: RequestOptions) => (await this.send({ method: 'GET', path: '/openapi.json' }, options)).json as Record<string, unknown>,
  };

  private list<T>(path: string, query: Record<string, unknown> | undefined, options?: RequestOptions): PageIterator<T> {
    return this.pages<T[], T>(path, query, options, (data) => data);
  }

  /** A paginated answer's items: `data` itself for a list, a part of it for a paged resource (the analytics' days). */
  private pages<D, T>(path: string, query: Record<string, unknown> | undefined, options: RequestOptions | undefined, itemsOf: (data: D) => T[]): PageIterator<T> {
    return new PageIterator<T>(async (cursor) => {
      // the same filters on every page: cursors are filter-aware
      const answer = await this.send({ method: 'GET', path, query: { ...query, cursor } }, options);
      const body = answer.json as Envelope<D>;
      return {
        data: itemsOf(body.data),
        nextCursor: body.meta?.next_cursor ?? null,
        requestId: body.meta?.request_id ?? answer.headers.get('x-request-id'),
        rateLimit: rateLimitOf(answer.headers),
      };
    });
  }

  private async request<T>(call: Call, options?: RequestOptions): Promise<ApiResult<T>> {
    const answer = await this.send(call, options);
    const body = answer.json as Envelope<T>;
    return {
      data: body.data,
      status: answer.status,
      etag: answer.headers.get('etag'),
      requestId: body.meta?.request_id ?? answer.headers.get('x-request-id'),
      rateLimit: rateLimitOf(answer.headers),
      replayed: answer.headers.get('idempotent-replayed') === 'true',
    };
  }

  /** One call: its attempts, until a 2xx, an error that is not retried, or the last retry. */
  private async send(call: Call, options: RequestOptions = {}): Promise<{ status: number; headers: Headers; json: unknown }> {
    const o = this.options;
    const maxRetries = options.maxRetries ?? o.maxRetries;
    const timeoutMs = options.timeoutMs ?? o.timeoutMs;
    const headers: Record<string, string> = { Accept: 'application/json', Authorization: `Bearer ${o.apiKey}`, ...options.headers };
    if (call.body !== undefined) headers['Content-Type'] = 'application/json';
    // one key for every attempt of this call: a write the service committed before the connection dropped is replayed, not repeated
    if (call.method === 'POST' || call.method === 'PATCH') headers['Idempotency-Key'] = options.idempotencyKey ?? crypto.randomUUID();
    if (options.ifMatch !== undefined) headers['If-Match'] = options.ifMatch;
    const url = `${o.baseUrl}${call.path}${queryString(call.query)}`;
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);

    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let response: Response;
      let text: string;
      try {
        response = await o.fetch(url, { method: call.method, headers, body, signal });
        text = await response.text();
      } catch (error) {
        // the caller's abort ends the call; a timeout or a failed connection is retried
        if (options.signal?.aborted) throw options.signal.reason;
        const timedOut = timeout.aborted;
        if (attempt >= maxRetries) {
          const message = timedOut ? `no answer within ${timeoutMs} ms (${attempt + 1} attempts)` : `connection failed (${attempt + 1} attempts)`;
          throw timedOut ? new TimeoutError(message, { cause: error }) : new ConnectionError(message, { cause: error });
        }
        await o.sleep(this.backoff(attempt), options.signal);
        continue;
      }
      const json = text === '' ? null : parseJson(text);
      if (response.ok) return { status: response.status, headers: response.headers, json };
      const retryable = response.status === 429 || response.status >= 500;
      const wait = retryable && attempt < maxRetries ? this.waitBefore(attempt, response.headers) : null;
      if (wait === null) throw new ApiError(response.status, (json as { error?: never } | null)?.error ?? null, response.headers);
      await o.sleep(wait, options.signal);
    }
  }

  /** Full jitter: a random wait up to the attempt's ceiling (initial × 2^attempt, capped). */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.options.maxRetryDelayMs, this.options.initialRetryDelayMs * 2 ** attempt);
    return Math.floor(this.options.random() * ceiling);
  }

  /** `Retry-After` when the answer has one (null: longer than the client waits), else the backoff. */
  private waitBefore(attempt: number, headers: Headers): number | null {
    const after = retryAfterMs(headers, Date.now());
    if (after === null) return this.backoff(attempt);
    return after > this.options.maxRetryAfterMs ? null : after;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
