import { SchedulerRegistry } from '@nestjs/schedule';
import { and, count, eq, sql } from 'drizzle-orm';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { AgentsRepository } from '../src/agents/agents.repository';
import { agents } from '../src/agents/agents.table';
import { idempotencyRecords } from '../src/idempotency/idempotency.table';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
import { IdempotencyService, MAX_RECORD_BYTES, requestFingerprint } from '../src/idempotency/idempotency.service';
import { IDEMPOTENCY_PURGE_JOB } from '../src/idempotency/idempotency-purge.job';
import { createOrg, type TestOrg } from './support/factories';
import { createTestApp, type TestApp } from './support/test-app';
import { executions, WriteProbeModule } from './support/write-probe.module';

const PROBES = '/api/v1/test-probes';
const DAY_MS = 24 * 60 * 60 * 1000;

let t: TestApp;
let org: TestOrg;

beforeAll(async () => {
  t = await createTestApp({}, { imports: [WriteProbeModule] });
  org = await createOrg(t.app);
});
afterAll(() => t.close());

const newKey = () => `key-${randomUUID()}`;
const newHandle = () => `h-${randomUUID().slice(0, 12)}`;

function post(key: string | null, body: unknown, auth = org.auth, path = PROBES) {
  const req = t.http.post(path).set('Authorization', auth);
  if (key !== null) req.set('Idempotency-Key', key);
  return typeof body === 'string' ? req.set('Content-Type', 'application/json').send(body) : req.send(body as object);
}

function patch(key: string | null, id: string, body: unknown, auth = org.auth) {
  const req = t.http.patch(`${PROBES}/${id}`).set('Authorization', auth);
  if (key !== null) req.set('Idempotency-Key', key);
  return req.send(body as object);
}

async function records(orgId: string, key: string) {
  return t.connection.db
    .select()
    .from(idempotencyRecords)
    .where(and(eq(idempotencyRecords.orgId, orgId), eq(idempotencyRecords.key, key)));
}

async function agentsWithHandle(orgId: string, handle: string): Promise<number> {
  const [row] = await t.connection.db
    .select({ n: count() })
    .from(agents)
    .where(and(eq(agents.orgId, orgId), eq(agents.handle, handle)));
  return row.n;
}

function withoutRequestId(body: { meta?: Record<string, unknown>; error?: Record<string, unknown> }) {
  const copy = structuredClone(body);
  if (copy.meta) delete copy.meta.request_id;
  if (copy.error) delete copy.error.request_id;
  return copy;
}

describe('1. Idempotency-Key is honored on every POST and PATCH, ignored on GET and DELETE', () => {
  it('a repeated POST with the same key runs once and replays the first response', async () => {
    const key = newKey();
    const handle = newHandle();
    const before = executions.create;
    const first = await post(key, { handle });
    const second = await post(key, { handle });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.data).toEqual(first.body.data);
    expect(executions.create - before).toBe(1);
    expect(await agentsWithHandle(org.orgId, handle)).toBe(1);
  });

  it('a repeated PATCH with the same key runs once and replays the first response', async () => {
    const created = await post(null, { handle: newHandle() });
    const key = newKey();
    const before = executions.update;
    const first = await patch(key, created.body.data.id, { name: 'renamed once' });
    const second = await patch(key, created.body.data.id, { name: 'renamed once' });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.data).toEqual(first.body.data);
    expect(executions.update - before).toBe(1);
  });

  it('GET ignores the header entirely, even a malformed one', async () => {
    const created = await post(null, { handle: newHandle() });
    const res = await t.http.get(`${PROBES}/${created.body.data.id}`).set('Authorization', org.auth).set('Idempotency-Key', 'x'.repeat(200));
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
  });

  it('DELETE ignores the header: a second call with the same key returns 404, not a replay', async () => {
    const created = await post(null, { handle: newHandle() });
    const key = newKey();
    const first = await t.http.delete(`${PROBES}/${created.body.data.id}`).set('Authorization', org.auth).set('Idempotency-Key', key);
    const second = await t.http.delete(`${PROBES}/${created.body.data.id}`).set('Authorization', org.auth).set('Idempotency-Key', key);
    expect(first.status).toBe(200);
    expect(second.status).toBe(404);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(await records(org.orgId, key)).toHaveLength(0);
  });

  it.each([
    ['empty', ''],
    ['129 characters', 'k'.repeat(129)],
    ['non-ASCII', 'clé-1'],
  ])('a key that is %s is 422 validation_failed naming the header, and nothing runs', async (_label, key) => {
    const before = executions.create;
    const res = await post(key, { handle: newHandle() });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.fields).toEqual({ 'Idempotency-Key': ['must be 1 to 128 ASCII characters'] });
    expect(executions.create).toBe(before);
  });

  it('accepts 1 and 128 ASCII characters, inner spaces and tabs included', async () => {
    for (const key of ['k', 'k'.repeat(128), `order 42 ${randomUUID()}`, `tab\there ${randomUUID()}`, `~!@#$%^&*()_+{}|:"<>?-=[]\\;',./${randomUUID()}`]) {
      const res = await post(key, { handle: newHandle() });
      expect(res.status).toBe(201);
    }
  });
});

describe('2. The fingerprint covers method, path and the raw body bytes — not the query string or headers', () => {
  const body = '{"handle":"HANDLE","name":"Fingerprint"}';

  it('is SHA-256 over method, path and the body as received', async () => {
    const key = newKey();
    const raw = body.replace('HANDLE', newHandle());
    await post(key, raw).expect(201);
    const [record] = await records(org.orgId, key);
    expect(record.fingerprint).toBe(requestFingerprint('POST', PROBES, Buffer.from(raw)));
  });

  it.each([
    ['whitespace', (raw: string) => raw.replace(',', ', ')],
    ['key order', (raw: string) => JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(raw)).reverse()))],
  ])('a body differing only in %s is 409 idempotency_key_reused', async (_label, change) => {
    const key = newKey();
    const raw = body.replace('HANDLE', newHandle());
    await post(key, raw).expect(201);
    const before = executions.create;
    const res = await post(key, change(raw));
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('idempotency_key_reused');
    expect(executions.create).toBe(before);
  });

  it('a different method or path with the same key is 409 idempotency_key_reused', async () => {
    const key = newKey();
    const created = await post(key, { handle: newHandle() }).expect(201);
    const otherMethod = await patch(key, created.body.data.id, { handle: created.body.data.handle });
    expect(otherMethod.status).toBe(409);
    expect(otherMethod.body.error.code).toBe('idempotency_key_reused');
    // the same route, reached through another path as received
    const otherPath = await post(key, { handle: created.body.data.handle }, org.auth, `${PROBES}/`);
    expect(otherPath.status).toBe(409);
    expect(otherPath.body.error.code).toBe('idempotency_key_reused');
  });

  it('a different query string or different headers still replay', async () => {
    const key = newKey();
    const raw = body.replace('HANDLE', newHandle());
    const first = await post(key, raw).expect(201);
    const withQuery = await post(key, raw, org.auth, `${PROBES}?trace=1`);
    expect(withQuery.status).toBe(201);
    expect(withQuery.headers['idempotent-replayed']).toBe('true');
    const withHeaders = await t.http
      .post(PROBES)
      .set('Authorization', org.auth)
      .set('Idempotency-Key', key)
      .set('Content-Type', 'application/json; charset=utf-8')
      .set('X-Client', 'other')
      .send(raw);
    expect(withHeaders.status).toBe(201);
    expect(withHeaders.body.data).toEqual(first.body.data);
  });
});

describe('3. The first response is stored for 24 hours and replayed, per organization', () => {
  it('stores status, body, fingerprint and an expiry 24 hours after the first request', async () => {
    const key = newKey();
    const res = await post(key, { handle: newHandle() }).expect(201);
    const [record] = await records(org.orgId, key);
    expect(record.status).toBe(201);
    expect(record.body).toEqual(res.body);
    expect(record.expiresAt.getTime() - record.createdAt.getTime()).toBe(DAY_MS);
    expect(Math.abs(record.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
  });

  it('a replay equals the first response in every field except meta.request_id, which is the new request\'s X-Request-ID', async () => {
    const key = newKey();
    const first = await post(key, { handle: newHandle() }).set('X-Request-ID', 'first-request').expect(201);
    const replay = await post(key, { handle: first.body.data.handle }).set('X-Request-ID', 'the-retry');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.meta.request_id).toBe('the-retry');
    expect(replay.headers['x-request-id']).toBe('the-retry');
    expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
  });

  it('after expiry the key executes fresh', async () => {
    const key = newKey();
    const handle = newHandle();
    const first = await post(key, { handle }).expect(201);
    await t.connection.db.delete(agents).where(eq(agents.id, first.body.data.id));
    await t.connection.db
      .update(idempotencyRecords)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(and(eq(idempotencyRecords.orgId, org.orgId), eq(idempotencyRecords.key, key)));
    const before = executions.create;
    const again = await post(key, { handle });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(again.body.data.id).not.toBe(first.body.data.id);
    expect(executions.create - before).toBe(1);
    const [record] = await records(org.orgId, key);
    expect((record.body as { data: { id: string } }).data.id).toBe(again.body.data.id);
    expect(record.expiresAt.getTime()).toBeGreaterThan(Date.now() + DAY_MS - 60_000);
  });

  it('keys are scoped per organization: another org\'s same key runs its own request', async () => {
    const other = await createOrg(t.app);
    const key = newKey();
    const mine = await post(key, { handle: newHandle() }).expect(201);
    const theirs = await post(key, { handle: newHandle() }, other.auth);
    expect(theirs.status).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    const sameBody = await post(key, { handle: mine.body.data.handle }, other.auth);
    expect(sameBody.status).toBe(409);
    expect(sameBody.body.error.code).toBe('idempotency_key_reused'); // their own record, not ours
    expect(await records(other.orgId, key)).toHaveLength(1);
  });
});

describe('4. Successes and the operation\'s own 4xx are stored; 401, 403, 429 and 5xx are not', () => {
  it('a 422 of the operation is stored and replayed', async () => {
    const key = newKey();
    const first = await post(key, { handle: 'Not A Handle!' });
    expect(first.status).toBe(422);
    const replay = await post(key, { handle: 'Not A Handle!' });
    expect(replay.status).toBe(422);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(withoutRequestId(replay.body)).toEqual(withoutRequestId(first.body));
    expect(replay.body.error.request_id).toBe(replay.headers['x-request-id']);
    const [record] = await records(org.orgId, key);
    expect(record.status).toBe(422);
  });

  it('a 409 agent_handle_taken is stored: the retry gets the same answer even after the handle is free again', async () => {
    const handle = newHandle();
    const taken = await post(null, { handle }).expect(201);
    const key = newKey();
    const first = await post(key, { handle });
    expect(first.status).toBe(409);
    expect(first.body.error.code).toBe('agent_handle_taken');
    await t.connection.db.delete(agents).where(eq(agents.id, taken.body.data.id));
    const before = executions.create;
    const replay = await post(key, { handle });
    expect(replay.status).toBe(409);
    expect(replay.body.error.code).toBe('agent_handle_taken');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(executions.create).toBe(before);
  });

  it('a 404 of a PATCH is stored and replayed', async () => {
    const key = newKey();
    const before = executions.update;
    const first = await patch(key, 'agent_000000000000000000000000', { name: 'x' });
    const replay = await patch(key, 'agent_000000000000000000000000', { name: 'x' });
    expect(first.status).toBe(404);
    expect(replay.status).toBe(404);
    expect(replay.body.error.code).toBe('agent_not_found');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(executions.update - before).toBe(1);
  });

  it('a 401 is not stored', async () => {
    const key = newKey();
    await post(key, { handle: newHandle() }, 'Bearer svc_live_not-a-real-key-000000000000000000000').expect(401);
    expect(await t.connection.db.select().from(idempotencyRecords).where(eq(idempotencyRecords.key, key))).toHaveLength(0);
  });

  it('a 403 is not stored: the retry with a key that has the scope runs', async () => {
    const readOnly = await org.key(['agents:read']);
    const key = newKey();
    const handle = newHandle();
    await post(key, { handle }, readOnly.auth).expect(403);
    expect(await records(org.orgId, key)).toHaveLength(0);
    const retry = await post(key, { handle });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a 429 is not stored', async () => {
    const limited = await createTestApp({ rateLimitPerMinute: 1, rateLimitPerHour: 1 }, { imports: [WriteProbeModule] });
    try {
      const o = await createOrg(limited.app);
      const key = newKey();
      await limited.http.get('/api/v1/org').set('Authorization', o.auth).expect(200);
      const res = await limited.http.post(PROBES).set('Authorization', o.auth).set('Idempotency-Key', key).send({ handle: newHandle() });
      expect(res.status).toBe(429);
      const stored = await limited.connection.db.select().from(idempotencyRecords).where(eq(idempotencyRecords.key, key));
      expect(stored).toHaveLength(0);
    } finally {
      await limited.close();
    }
  });

  it('a 5xx is not stored: the retry runs the operation again', async () => {
    const key = newKey();
    const before = executions.create;
    const first = await post(key, { handle: 'boom-500' });
    expect(first.status).toBe(500);
    expect(first.body.error.code).toBe('internal_error');
    expect(await records(org.orgId, key)).toHaveLength(0);
    const retry = await post(key, { handle: 'boom-500' });
    expect(retry.status).toBe(500);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(executions.create - before).toBe(2);
  });
});

describe('an answer over MAX_RECORD_BYTES (a lost input bound) is never stored, nor its write kept', () => {
  it('500 internal_error, the write rolled back, no record, the size logged and not the answer', async () => {
    const key = newKey();
    const handle = `huge-${newHandle()}`;
    const first = await post(key, { handle });
    expect(first.status).toBe(500);
    expect(first.body.error.code).toBe('internal_error');
    expect(await records(org.orgId, key)).toHaveLength(0);
    const [row] = await t.connection.db.select({ id: agents.id }).from(agents).where(and(eq(agents.orgId, org.orgId), eq(agents.handle, handle)));
    expect(row).toBeUndefined();
    const logged = t.logs.find((line) => line.includes(first.headers['x-request-id'] as string) && line.includes('over its bound'));
    expect(logged).toBeDefined();
    expect(JSON.parse(logged!).bytes).toBeGreaterThan(MAX_RECORD_BYTES);
    expect(logged!.length).toBeLessThan(1000);
  });
});

describe('5. Concurrent requests with the same key both execute; one record wins, and it is the success', () => {
  it('10 concurrent identical requests all get a complete response; one record is stored; a later replay is the 201', async () => {
    const key = newKey();
    const handle = `slow-${newHandle()}`;
    const before = executions.create;
    const responses = await Promise.all(Array.from({ length: 10 }, () => post(key, { handle })));
    // on a server engine they race (every one runs); the embedded engine's one connection
    // serializes the transactions, and the later ones find the first one's record
    expect(executions.create - before).toBeGreaterThanOrEqual(1);
    // exactly one ran to a stored 201; every other one answers with that 201 (replayed) or its own 409
    expect(responses.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    const winner = responses.find((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined)!;
    for (const res of responses) {
      expect([201, 409]).toContain(res.status);
      if (res.status === 201) {
        expect(res.body.data).toEqual(expect.objectContaining({ handle, id: winner.body.data.id }));
        expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
      } else {
        expect(res.body.error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String), request_id: res.headers['x-request-id'] }));
      }
    }
    expect(await agentsWithHandle(org.orgId, handle)).toBe(1);
    const stored = await records(org.orgId, key);
    expect(stored).toHaveLength(1);
    expect(stored[0].status).toBe(201);
    const [agent] = await t.connection.db.select().from(agents).where(and(eq(agents.orgId, org.orgId), eq(agents.handle, handle)));
    const replay = await post(key, { handle });
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(agent.id);
  });

  it('when the racers\' outcomes differ, the success replaces a stored 4xx of the same request, never the reverse', async () => {
    const service = t.app.get(IdempotencyService);
    const key = newKey();
    const startedAt = new Date();
    const conflict = { fingerprint: 'same', status: 409, body: { error: { code: 'agent_handle_taken' } } };
    const success = { fingerprint: 'same', status: 201, body: { data: { id: 'agent_1' } } };
    expect(await service.record(org.orgId, key, conflict, startedAt)).toBe(true);
    expect(await service.record(org.orgId, key, success, startedAt)).toBe(true);
    expect(await service.record(org.orgId, key, conflict, startedAt)).toBe(false);
    expect(await service.record(org.orgId, key, { ...success, body: { data: { id: 'agent_2' } } }, startedAt)).toBe(false);
    const [record] = await records(org.orgId, key);
    expect(record.status).toBe(201);
    expect(record.body).toEqual(success.body);

    const otherKey = newKey();
    await service.record(org.orgId, otherKey, conflict, startedAt);
    expect(await service.record(org.orgId, otherKey, { ...success, fingerprint: 'different request' }, startedAt)).toBe(false);
    expect((await records(org.orgId, otherKey))[0].status).toBe(409);
  });
});

describe('6. Expired records are purged by a scheduled job, in batches, safely on several instances', () => {
  async function seedRecords(orgId: string, expired: number, live: number): Promise<void> {
    const now = Date.now();
    const rows = [
      ...Array.from({ length: expired }, (_, i) => ({ at: now - 2 * DAY_MS, expires: now - 1000 - i, key: `expired-${i}-${randomUUID()}` })),
      ...Array.from({ length: live }, (_, i) => ({ at: now, expires: now + DAY_MS, key: `live-${i}-${randomUUID()}` })),
    ];
    await t.connection.db.insert(idempotencyRecords).values(
      rows.map((r) => ({ orgId, key: r.key, fingerprint: 'f', status: 201, body: {}, createdAt: new Date(r.at), expiresAt: new Date(r.expires) })),
    );
  }

  async function countRecords(orgId: string, which: 'expired' | 'live'): Promise<number> {
    const [row] = await t.connection.db
      .select({ n: count() })
      .from(idempotencyRecords)
      .where(and(eq(idempotencyRecords.orgId, orgId), sql`${idempotencyRecords.expiresAt} ${sql.raw(which === 'expired' ? '<=' : '>')} now()`));
    return row.n;
  }

  it('deletes every expired record in batches and keeps the live ones', async () => {
    const a = await createOrg(t.app);
    const b = await createOrg(t.app);
    await seedRecords(a.orgId, 7, 3);
    await seedRecords(b.orgId, 4, 2);
    const batches = jest.spyOn(t.app.get(IdempotencyRepository), 'deleteExpiredBatch');
    const deleted = await t.app.get(IdempotencyService).purgeExpired(new Date(), 3);
    expect(deleted).toBeGreaterThanOrEqual(11);
    expect(batches.mock.calls.length).toBeGreaterThanOrEqual(4); // 11 rows in batches of 3
    batches.mockRestore();
    expect(await countRecords(a.orgId, 'expired')).toBe(0);
    expect(await countRecords(b.orgId, 'expired')).toBe(0);
    expect(await countRecords(a.orgId, 'live')).toBe(3);
    expect(await countRecords(b.orgId, 'live')).toBe(2);
  });

  it('two purges at once (two instances) delete each record once and both finish', async () => {
    const a = await createOrg(t.app);
    await seedRecords(a.orgId, 20, 1);
    const service = t.app.get(IdempotencyService);
    const [one, two] = await Promise.all([service.purgeExpired(new Date(), 5), service.purgeExpired(new Date(), 5)]);
    expect(one + two).toBeGreaterThanOrEqual(20);
    expect(await countRecords(a.orgId, 'expired')).toBe(0);
    expect(await countRecords(a.orgId, 'live')).toBe(1);
  });

  it('runs on IDEMPOTENCY_PURGE_CRON when jobs are enabled, and not at all when the cron is off', async () => {
    const scheduled = await createTestApp({ jobsEnabled: true, idempotencyPurgeCron: '* * * * * *' });
    try {
      expect(scheduled.app.get(SchedulerRegistry).doesExist('cron', IDEMPOTENCY_PURGE_JOB)).toBe(true);
      const o = await createOrg(scheduled.app);
      await scheduled.connection.db.insert(idempotencyRecords).values({
        orgId: o.orgId,
        key: 'old',
        fingerprint: 'f',
        status: 201,
        body: {},
        createdAt: new Date(Date.now() - 2 * DAY_MS),
        expiresAt: new Date(Date.now() - DAY_MS),
      });
      // a job every second; the bound only stops the wait (a loaded machine delays every run)
      const deadline = Date.now() + 30_000;
      let left = 1;
      while (left > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        left = (await scheduled.connection.db.select().from(idempotencyRecords).where(eq(idempotencyRecords.orgId, o.orgId))).length;
      }
      expect(left).toBe(0);
    } finally {
      await scheduled.close();
    }
    const off = await createTestApp({ jobsEnabled: true, idempotencyPurgeCron: null });
    try {
      expect(off.app.get(SchedulerRegistry).doesExist('cron', IDEMPOTENCY_PURGE_JOB)).toBe(false);
    } finally {
      await off.close();
    }
  });
});

describe('fault: the idempotency store is unavailable', () => {
  it('the lookup failing answers 503 service_unavailable and does not run the operation', async () => {
    const faulty = await createTestApp({}, { imports: [WriteProbeModule] });
    const o = await createOrg(faulty.app);
    // the key is now in the auth cache, so only the idempotency store is missing below
    await faulty.http.get('/api/v1/org').set('Authorization', o.auth).expect(200);
    await faulty.connection.close(); // either engine: the database is gone
    const before = executions.create;
    const res = await faulty.http.post(PROBES).set('Authorization', o.auth).set('Idempotency-Key', newKey()).send({ handle: newHandle() });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('service_unavailable');
    expect(res.headers['retry-after']).toBe('1');
    expect(executions.create).toBe(before);
    expect(faulty.logs.join('')).toContain('idempotency store unavailable');
    await faulty.close();
  });

  it('the record failing to save rolls the write back: 503, nothing stored, and the retry executes fresh', async () => {
    const save = jest.spyOn(t.app.get(IdempotencyRepository), 'save').mockRejectedValueOnce(new Error('Connection terminated'));
    const key = newKey();
    const handle = newHandle();
    try {
      const res = await post(key, { handle });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.headers['retry-after']).toBe('1');
    } finally {
      save.mockRestore();
    }
    // the write and its record commit together or not at all
    expect(await agentsWithHandle(org.orgId, handle)).toBe(0);
    expect(await records(org.orgId, key)).toHaveLength(0);
    const before = executions.create;
    const retry = await post(key, { handle });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(executions.create - before).toBe(1);
    expect(await agentsWithHandle(org.orgId, handle)).toBe(1);
    const replay = await post(key, { handle });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(retry.body.data.id);
  });

  it('every query of the operation runs in the request transaction, prepared reads included (a read of its own uncommitted row)', async () => {
    const created = await post(null, { handle: newHandle() });
    const key = newKey();
    // the probe's PATCH writes, then the interceptor stores; a lookup through a prepared
    // statement on the root database must see the row the transaction wrote, not wait for it
    const repo = t.app.get(IdempotencyRepository);
    const realSave = repo.save.bind(repo);
    let seenInside: unknown = undefined;
    const save = jest.spyOn(repo, 'save').mockImplementation(async (orgId, record) => {
      // AgentsRepository.findLive is a prepared statement built on the root database
      seenInside = (await t.app.get(AgentsRepository).findLive(orgId, created.body.data.id))?.name;
      return realSave(orgId, record);
    });
    try {
      const res = await patch(key, created.body.data.id, { name: 'inside the transaction' });
      expect(res.status).toBe(200);
    } finally {
      save.mockRestore();
    }
    expect(seenInside).toBe('inside the transaction');
  });
});

describe('OpenAPI: every POST and PATCH documents Idempotency-Key and Idempotent-Replayed', () => {
  it('adds the header parameter to POST and PATCH operations only, and the replay header to their responses', async () => {
    const doc = (await t.http.get('/api/v1/openapi.json').expect(200)).body;
    const item = doc.paths['/test-probes'];
    const byId = doc.paths['/test-probes/{id}'];
    const names = (op: { parameters?: Array<{ name: string; in: string }> }) => (op.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
    expect(names(item.post)).toContain('Idempotency-Key');
    expect(names(byId.patch)).toContain('Idempotency-Key');
    expect(names(byId.get)).not.toContain('Idempotency-Key');
    expect(names(byId.delete)).not.toContain('Idempotency-Key');
    const param = item.post.parameters.find((p: { name: string }) => p.name === 'Idempotency-Key');
    expect(param).toEqual(expect.objectContaining({ in: 'header', required: false, schema: expect.objectContaining({ minLength: 1, maxLength: 128 }) }));
    expect(item.post.responses['201'].headers['Idempotent-Replayed']).toBeDefined();
    expect(item.post.responses['409'].description).toContain('idempotency_key_reused');
    expect(byId.patch.responses['200'].headers['Idempotent-Replayed']).toBeDefined();
  });

  it('the document with these additions is still valid OpenAPI 3.1', async () => {
    const doc = (await t.http.get('/api/v1/openapi.json').expect(200)).body;
    // the validator is ESM-only: run it in a plain Node process
    const script = `
      import { Validator } from '@seriousme/openapi-schema-validator';
      let text = '';
      for await (const chunk of process.stdin) text += chunk;
      const result = await new Validator({ strict: true }).validate(JSON.parse(text));
      process.stdout.write(JSON.stringify(result));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { input: JSON.stringify(doc), encoding: 'utf8', cwd: process.cwd() });
    const result = JSON.parse(run.stdout);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });
});
