import { Controller, Get, Module, Post } from '@nestjs/common';
import { createServer, type Server } from 'node:http';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { AgentsService } from '../src/agents/agents.service';
import { ApiKeyGuard } from '../src/auth/api-key.guard';
import { RequireScope } from '../src/auth/auth.decorators';
import { HotRoute } from '../src/hot-routes/hot-route.decorator';
import { HotRouteDispatcher } from '../src/hot-routes/hot-route.dispatcher';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The hot path (HotRouteDispatcher) answers plain point reads in front of
 * the framework. Every answer it gives must be the one the full pipeline
 * gives: each case below is sent to the app's server (hot path installed) and
 * to a second server on the same app and database that has only the
 * framework's request listener, and the two answers are compared.
 */
let t: TestApp;
let framework: Server;
let full: TestAgent;
let org: TestOrg;
let other: TestOrg;
let agentId: string;
let otherAgentId: string;
let deletedAgentId: string;

const LIMITED_PLAN = 'hot-limited';

async function createAgent(owner: TestOrg, handle: string): Promise<string> {
  const res = await t.http.post('/api/v1/agents').set('Authorization', owner.auth).send({ handle, name: handle, instructions: 'Be brief.' });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

beforeAll(async () => {
  t = await createTestApp({ rateLimitPlans: { [LIMITED_PLAN]: { perMinute: 2, perHour: 1000 } } });
  framework = createServer(t.app.getHttpAdapter().getInstance());
  full = request(framework);
  org = await createOrg(t.app);
  other = await createOrg(t.app);
  agentId = await createAgent(org, 'hotOne');
  otherAgentId = await createAgent(other, 'hotOther');
  deletedAgentId = await createAgent(org, 'hotGone');
  expect((await t.http.delete(`/api/v1/agents/${deletedAgentId}`).set('Authorization', org.auth)).status).toBe(200);
});
afterAll(async () => {
  framework.close();
  await t.close();
});
afterEach(() => jest.restoreAllMocks());

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Status, body and headers, less what differs on every request (request id, date, remaining budget). */
function answer(res: request.Response): Answer {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers as Record<string, string>)) {
    if (['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'connection', 'keep-alive'].includes(name)) continue;
    headers[name] = value;
  }
  const requestId = res.headers['x-request-id'];
  const text = JSON.stringify(res.body).split(requestId).join('<request-id>');
  return { status: res.status, headers, body: JSON.parse(text) };
}

type Send = (agent: TestAgent) => request.Test;

/** The same request through both servers: the answers must be equal; returns the hot one. */
async function same(send: Send): Promise<Answer> {
  const hot = answer(await send(t.http));
  const slow = answer(await send(full));
  expect(hot).toEqual(slow);
  return hot;
}

/** Did the hot path answer the request (rather than hand it to the framework)? */
async function servedHot(send: Send): Promise<boolean> {
  const dispatcher = t.app.get(HotRouteDispatcher) as unknown as { serve(...args: unknown[]): Promise<boolean> };
  const serve = jest.spyOn(dispatcher, 'serve');
  const guard = jest.spyOn(t.app.get(ApiKeyGuard), 'canActivate');
  await send(t.http);
  const answered = serve.mock.results.length === 1 && (await serve.mock.results[0].value) === true;
  // the framework's guards never see a request the hot path answered
  if (answered) expect(guard).not.toHaveBeenCalled();
  serve.mockRestore();
  guard.mockRestore();
  return answered;
}

describe('the hot path answers exactly as the full pipeline', () => {
  test('own agent, by prefixed and by bare id: 200 with the envelope and rate-limit headers', async () => {
    const prefixed = await same((a) => a.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth));
    expect(prefixed.status).toBe(200);
    expect(prefixed.body).toMatchObject({ data: { id: agentId, handle: 'hotOne' }, meta: { request_id: '<request-id>' } });
    expect(prefixed.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(prefixed.headers['x-ratelimit-limit']).toBeDefined();
    const bare = await same((a) => a.get(`/api/v1/agents/${agentId.slice('agent_'.length)}`).set('Authorization', org.auth));
    expect(bare).toEqual(prefixed);
  });

  test.each([
    ['another organization', () => otherAgentId],
    ['soft-deleted', () => deletedAgentId],
    ['unknown', () => 'agent_0123456789abcdef01234567'],
    ['malformed', () => 'agent_not-an-id'],
    ['long', () => 'a'.repeat(128)],
  ])('%s agent: 404 agent_not_found', async (_case, id) => {
    const res = await same((a) => a.get(`/api/v1/agents/${id()}`).set('Authorization', org.auth));
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: { code: 'agent_not_found', request_id: '<request-id>' } });
  });

  test('a key without agents:read: 403 insufficient_scope', async () => {
    const key = await org.key(['org:read']);
    const res = await same((a) => a.get(`/api/v1/agents/${agentId}`).set('Authorization', key.auth));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: { code: 'insufficient_scope' } });
  });

  test('suspended organization: 403 org_inactive; past_due still reads', async () => {
    const suspended = await createOrg(t.app, { status: 'suspended' });
    expect((await same((a) => a.get('/api/v1/org').set('Authorization', suspended.auth))).body).toMatchObject({ error: { code: 'org_inactive' } });
    const pastDue = await createOrg(t.app, { status: 'past_due' });
    expect((await same((a) => a.get('/api/v1/org').set('Authorization', pastDue.auth))).status).toBe(200);
  });

  test.each([
    ['no Authorization header', undefined],
    ['a malformed header', 'Bearer nope'],
    ['an unknown key', `Bearer svc_live_${'Q'.repeat(40)}`],
  ])('%s: 401 unauthorized', async (_case, authorization) => {
    const res = await same((a) => {
      const req = a.get(`/api/v1/agents/${agentId}`);
      return authorization ? req.set('Authorization', authorization) : req;
    });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: { code: 'unauthorized' } });
  });

  test('expired and revoked keys: 401', async () => {
    const expired = await org.key(['agents:read'], { expiresAt: new Date(Date.now() - 1000) });
    const revoked = await org.key(['agents:read'], { revoked: true });
    for (const key of [expired, revoked]) {
      expect((await same((a) => a.get(`/api/v1/agents/${agentId}`).set('Authorization', key.auth))).status).toBe(401);
    }
  });

  test('GET /org: 200, the same document', async () => {
    const res = await same((a) => a.get('/api/v1/org').set('Authorization', org.auth));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ data: { id: org.orgId } });
  });

  test('a well-formed X-Request-ID is echoed in the header and the body; a bad one is replaced', async () => {
    const kept = await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth).set('X-Request-ID', 'hot-trace-1');
    expect(kept.headers['x-request-id']).toBe('hot-trace-1');
    expect(kept.body.meta.request_id).toBe('hot-trace-1');
    const replaced = await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth).set('X-Request-ID', 'x'.repeat(129));
    expect(replaced.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(replaced.body.meta.request_id).toBe(replaced.headers['x-request-id']);
  });

  test('the shared rate limit: both paths count against one budget and answer 429 alike', async () => {
    const limited = await createOrg(t.app, { plan: LIMITED_PLAN });
    const send: Send = (a) => a.get(`/api/v1/org`).set('Authorization', limited.auth);
    const first = await send(t.http);
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    const second = await send(full);
    expect(second.status).toBe(200);
    expect(second.headers['x-ratelimit-remaining']).toBe('0');
    const res = await same(send);
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ error: { code: 'rate_limited' } });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });

  test('an unexpected error: 500 internal_error without internals, logged once with the request id', async () => {
    jest.spyOn(t.app.get(AgentsService), 'getAgent').mockRejectedValue(new Error('relation "secret_table" exploded'));
    const res = await same((a) => a.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth));
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ error: { code: 'internal_error', message: 'An unexpected error occurred.' } });
    expect(JSON.stringify(res.body)).not.toContain('secret_table');
    const hot = await t.http.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth).set('X-Request-ID', 'hot-boom');
    expect(hot.status).toBe(500);
    const logged = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.request_id === 'hot-boom');
    expect(logged.map((entry) => entry.msg).sort()).toEqual(['request', 'unhandled error']);
  });

  test('a database that cannot be reached: 503 service_unavailable', async () => {
    const unreachable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    jest.spyOn(t.app.get(AgentsService), 'getAgent').mockRejectedValue(unreachable);
    const res = await same((a) => a.get(`/api/v1/agents/${agentId}`).set('Authorization', org.auth));
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: { code: 'service_unavailable' } });
  });
});

describe('which requests take the hot path', () => {
  const own = () => `/api/v1/agents/${agentId}`;

  test('plain GETs of the marked routes with a valid key do', async () => {
    expect(await servedHot((a) => a.get(own()).set('Authorization', org.auth))).toBe(true);
    expect(await servedHot((a) => a.get('/api/v1/org').set('Authorization', org.auth))).toBe(true);
    // errors after authentication are the hot path's to answer too
    expect(await servedHot((a) => a.get('/api/v1/agents/agent_0123456789abcdef01234567').set('Authorization', org.auth))).toBe(true);
  });

  test.each([
    ['a query string', (a: TestAgent) => a.get(`${own()}?include=everything`).set('Authorization', org.auth)],
    ['a trailing slash', (a: TestAgent) => a.get(`${own()}/`).set('Authorization', org.auth)],
    ['another letter case', (a: TestAgent) => a.get(own().toUpperCase()).set('Authorization', org.auth)],
    ['percent-encoding', (a: TestAgent) => a.get(own().replace('agent_', 'agent%5F')).set('Authorization', org.auth)],
    ['a body', (a: TestAgent) => a.get(own()).set('Authorization', org.auth).set('Content-Type', 'application/json').send('{"a":1}')],
    ['HEAD', (a: TestAgent) => a.head(own()).set('Authorization', org.auth)],
    ['a bad key', (a: TestAgent) => a.get(own()).set('Authorization', 'Bearer svc_live_nope')],
    ['a list route', (a: TestAgent) => a.get('/api/v1/agents').set('Authorization', org.auth)],
    ['a sub-resource', (a: TestAgent) => a.get(`${own()}/analytics`).set('Authorization', org.auth)],
  ])('%s goes to the framework, with the same answer', async (_case, send) => {
    expect(await servedHot(send)).toBe(false);
    await same(send);
  });

  test('a malformed body on a GET is still refused by the framework (422), not skipped', async () => {
    const res = await same((a) => a.get(own()).set('Authorization', org.auth).set('Content-Type', 'application/json').send('{bad'));
    expect(res.status).toBe(422);
  });

  test('one log line per request, whichever path answered it', async () => {
    await t.http.get(own()).set('Authorization', org.auth).set('X-Request-ID', 'hot-log-1');
    await t.http.get(`${own()}?x=1`).set('Authorization', org.auth).set('X-Request-ID', 'hot-log-2');
    await t.http.get(own()).set('Authorization', 'Bearer svc_live_nope').set('X-Request-ID', 'hot-log-3');
    const lines = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request' && String(entry.request_id).startsWith('hot-log-'));
    expect(lines.map((line) => [line.request_id, line.status, line.path])).toEqual([
      ['hot-log-1', 200, own()],
      ['hot-log-2', 200, own()],
      ['hot-log-3', 401, own()],
    ]);
    expect(lines[0]).toMatchObject({ org_id: org.orgId, key_id: org.keyId });
  });
});

describe('@HotRoute is refused where the hot path could not answer as the framework would', () => {
  @Controller('hot-probe')
  class WriteProbe {
    @Post()
    @RequireScope('org:read')
    @HotRoute<WriteProbe>(async () => ({}))
    write(): object {
      return {};
    }
  }

  @Controller('hot-public')
  class PublicProbe {
    @Get(':id')
    @HotRoute<PublicProbe>(async () => ({}))
    read(): object {
      return {};
    }
  }

  @Controller('agents')
  class OverlapProbe {
    @Get('trash')
    @RequireScope('agents:read')
    trash(): object {
      return {};
    }
  }

  test.each([
    ['a write', WriteProbe, /only GET routes/],
    ['a route without a scope', PublicProbe, /only routes that require a scope/],
    ['a GET route the hot template would shadow', OverlapProbe, /overlaps another GET route/],
  ])('%s: the app does not start', async (_case, controller, message) => {
    @Module({ controllers: [controller] })
    class ProbeModule {}
    await expect(createTestApp({}, { imports: [ProbeModule] })).rejects.toThrow(message);
  });
});
