import { nulCharacterPaths } from './validation';

describe('nulCharacterPaths', () => {
  it('finds U+0000 in nested strings, array items and keys, naming each path once', () => {
    const body = {
      name: 'ok',
      tools: [{ name: 'a\u0000b' }, { name: 'fine' }],
      config: { url: 'https://x\u0000', 'k\u0000ey': { deep: '\u0000' } },
      n: 1,
      nothing: null,
    };
    expect(nulCharacterPaths(body)).toEqual(['tools[0].name', 'config.url', 'config.k\\u0000ey']);
  });

  it('a top-level string is "body"; clean values give nothing', () => {
    expect(nulCharacterPaths('\u0000')).toEqual(['body']);
    expect(nulCharacterPaths({ a: ['x', { b: 'y' }], c: true })).toEqual([]);
  });
});
