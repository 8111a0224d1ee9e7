import { constantTimeEqual, decryptJson, encryptJson, newSecretKey, parseKey32, randomUrlSafe, sha256Hex } from './crypto';

describe('sha256Hex', () => {
  it('matches the known vector', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('constantTimeEqual', () => {
  it('compares equal and unequal values, including different lengths', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
  });
});

describe('randomUrlSafe', () => {
  it('has the requested length and only URL-safe characters', () => {
    const value = randomUrlSafe(40);
    expect(value).toHaveLength(40);
    expect(value).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(randomUrlSafe(40)).not.toBe(value);
  });
});

describe('parseKey32', () => {
  it('accepts base64 and hex 32-byte keys', () => {
    const b64 = newSecretKey();
    expect(parseKey32(b64)?.length).toBe(32);
    expect(parseKey32('ab'.repeat(32))?.length).toBe(32);
  });
  it('rejects anything else', () => {
    expect(parseKey32('short')).toBeNull();
    expect(parseKey32('ab'.repeat(31))).toBeNull();
  });
});

describe('AES-256-GCM envelope', () => {
  const key = parseKey32(newSecretKey())!;

  it('round-trips a value', () => {
    const secret = { token: 's3cr3t-value' };
    const envelope = encryptJson(key, secret, 'tool_1');
    expect(envelope).not.toContain('s3cr3t');
    expect(decryptJson(key, envelope, 'tool_1')).toEqual(secret);
  });

  it('uses a fresh IV each time', () => {
    expect(encryptJson(key, { a: 1 }, 'x')).not.toBe(encryptJson(key, { a: 1 }, 'x'));
  });

  it('fails with another key, another owner or a tampered ciphertext', () => {
    const envelope = encryptJson(key, { a: 1 }, 'tool_1');
    expect(() => decryptJson(parseKey32(newSecretKey())!, envelope, 'tool_1')).toThrow();
    expect(() => decryptJson(key, envelope, 'tool_2')).toThrow();
    const parts = envelope.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => decryptJson(key, parts.join('.'), 'tool_1')).toThrow();
    expect(() => decryptJson(key, 'garbage', 'tool_1')).toThrow();
  });
});
