import { createHash } from 'node:crypto';
import { ApiError } from '../common/api-error';
import type { AppLogger } from '../common/logger';
import type { IdempotencyRepository } from './idempotency.repository';
import {
  IdempotencyRecordTooLarge,
  IdempotencyService,
  isStorableStatus,
  MAX_RECORD_BYTES,
  parseIdempotencyKey,
  recordBytes,
  requestFingerprint,
} from './idempotency.service';

describe('parseIdempotencyKey', () => {
  it('returns null when the header is absent', () => {
    expect(parseIdempotencyKey(undefined)).toBeNull();
  });

  it.each(['a', 'x'.repeat(128), 'order 42', 'a\tb', '550e8400-e29b-41d4-a716-446655440000', '!~'])('accepts %j', (key) => {
    expect(parseIdempotencyKey(key)).toBe(key);
  });

  it.each([
    ['empty', ''],
    ['129 characters', 'x'.repeat(129)],
    ['a line feed', 'a\nb'],
    ['NUL', 'a\u0000b'],
    ['DEL', 'a\x7fb'],
    ['Latin-1', 'clé'],
  ])('rejects %s with 422 validation_failed naming the header', (_label, key) => {
    expect.assertions(3);
    try {
      parseIdempotencyKey(key);
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(422);
      expect((error as ApiError).details?.fields).toHaveProperty(['Idempotency-Key']);
    }
  });
});

describe('requestFingerprint', () => {
  const body = Buffer.from('{"a":1,"b":2}');

  it('is SHA-256 of method, path and body bytes, newline separated', () => {
    const expected = createHash('sha256').update('POST\n/api/v1/agents\n{"a":1,"b":2}').digest('hex');
    expect(requestFingerprint('post', '/api/v1/agents', body)).toBe(expected);
  });

  it('changes with the method, the path, whitespace and key order; an absent body is an empty one', () => {
    const base = requestFingerprint('POST', '/api/v1/agents', body);
    expect(requestFingerprint('PATCH', '/api/v1/agents', body)).not.toBe(base);
    expect(requestFingerprint('POST', '/api/v1/agents/', body)).not.toBe(base);
    expect(requestFingerprint('POST', '/api/v1/agents', Buffer.from('{"a":1, "b":2}'))).not.toBe(base);
    expect(requestFingerprint('POST', '/api/v1/agents', Buffer.from('{"b":2,"a":1}'))).not.toBe(base);
    expect(requestFingerprint('POST', '/x', undefined)).toBe(requestFingerprint('POST', '/x', Buffer.alloc(0)));
  });
});

describe('isStorableStatus', () => {
  it('stores 2xx and the operation\'s own 4xx, never 401, 403, 429 or 5xx', () => {
    expect([200, 201, 404, 409, 422].every(isStorableStatus)).toBe(true);
    expect([401, 403, 412, 429, 500, 503].some(isStorableStatus)).toBe(false);
  });
});

describe('IdempotencyService.record: the bound on a stored answer', () => {
  const save = jest.fn(async () => true);
  const service = new IdempotencyService({ save } as unknown as IdempotencyRepository, {} as AppLogger);
  // a body whose JSON text is `bytes` long: {"data":"xxx…"}
  const bodyOf = (bytes: number) => ({ data: 'x'.repeat(bytes - '{"data":""}'.length) });
  const outcome = (body: unknown) => ({ fingerprint: 'f', status: 201, body });

  beforeEach(() => save.mockClear());

  it('counts the JSON text in UTF-8 bytes, as the store writes it', () => {
    expect(recordBytes(bodyOf(1000))).toBe(1000);
    expect(recordBytes({ data: 'é\u0001' })).toBe('{"data":"é\\u0001"}'.length + 1);
  });

  it('stores an answer at the bound', async () => {
    await expect(service.record('org', 'k', outcome(bodyOf(MAX_RECORD_BYTES)), new Date())).resolves.toBe(true);
    expect(save).toHaveBeenCalledTimes(1);
  });

  it('refuses one byte over it, storing nothing, and tells only the size', async () => {
    const refused = service.record('org', 'k', outcome(bodyOf(MAX_RECORD_BYTES + 1)), new Date());
    await expect(refused).rejects.toBeInstanceOf(IdempotencyRecordTooLarge);
    await expect(refused).rejects.toMatchObject({ bytes: MAX_RECORD_BYTES + 1, message: expect.not.stringContaining('xxx') });
    expect(save).not.toHaveBeenCalled();
  });
});
