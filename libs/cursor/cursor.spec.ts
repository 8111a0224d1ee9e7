import { CursorCodec, canonicalJson, filterHash } from './cursor';

describe('cursor codec', () => {
  const codec = new CursorCodec('a-test-secret-of-enough-length');

  it('round-trips the last id and filter hash', () => {
    const cursor = codec.encode({ lastId: 'agent_0123456789abcdef01234567', filterHash: filterHash({}) });
    expect(codec.decode(cursor)).toEqual({ lastId: 'agent_0123456789abcdef01234567', filterHash: filterHash({}) });
  });

  it('is URL-safe and opaque', () => {
    const cursor = codec.encode({ lastId: 'conv_0123456789abcdef01234567', filterHash: 'x' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(encodeURIComponent(cursor)).toBe(cursor);
  });

  it('rejects a tampered payload', () => {
    const cursor = codec.encode({ lastId: 'agent_0123456789abcdef01234567', filterHash: 'x' });
    const [, mac] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify({ i: 'agent_ffffffffffffffffffffffff', f: 'x' })).toString('base64url');
    expect(codec.decode(`${forged}.${mac}`)).toBeNull();
  });

  it('rejects a cursor signed with another secret', () => {
    const other = new CursorCodec('another-secret-of-enough-length');
    expect(codec.decode(other.encode({ lastId: 'a', filterHash: 'x' }))).toBeNull();
  });

  it.each(['', 'abc', 'a.b.c', '.', 'x'.repeat(2000), '%%%.%%%'])('rejects garbage %p', (value) => {
    expect(codec.decode(value)).toBeNull();
  });

  it('refuses a short secret', () => {
    expect(() => new CursorCodec('short')).toThrow();
  });
});

describe('filter hash', () => {
  it('ignores key order and undefined values', () => {
    expect(filterHash({ a: 1, b: 'x', c: undefined })).toBe(filterHash({ b: 'x', a: 1 }));
  });

  it('differs when a filter differs', () => {
    expect(filterHash({ source: 'embed' })).not.toBe(filterHash({ source: 'dashboard' }));
    expect(filterHash({ metadata: { a: '1' } })).not.toBe(filterHash({ metadata: { a: '2' } }));
  });

  it('canonicalizes nested objects', () => {
    expect(canonicalJson({ b: { y: 1, x: [2, { d: 1, c: 2 }] }, a: null })).toBe('{"a":null,"b":{"x":[2,{"c":2,"d":1}],"y":1}}');
  });
});
