import { createHash } from 'node:crypto';
import { ApiError } from '../common/api-error';
import { isStorableStatus, parseIdempotencyKey, requestFingerprint } from './idempotency.service';

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
