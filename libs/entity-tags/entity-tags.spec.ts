import { entityTagOf, ifMatchHolds, ifNoneMatchMatches } from './entity-tags';

describe('entityTagOf', () => {
  it('is a quoted strong tag that follows the representation, and only it', () => {
    const tag = entityTagOf({ id: 'agent_1', name: 'a' });
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(entityTagOf({ id: 'agent_1', name: 'a' })).toBe(tag);
    expect(entityTagOf({ id: 'agent_1', name: 'b' })).not.toBe(tag);
    expect(entityTagOf(JSON.parse(JSON.stringify({ id: 'agent_1', name: 'a' })))).toBe(tag);
  });

  it('a date is tagged as the JSON text it is sent as', () => {
    const at = new Date('2024-01-02T03:04:05.000Z');
    expect(entityTagOf({ at })).toBe(entityTagOf({ at: at.toISOString() }));
  });
});

describe('If-Match (strong comparison)', () => {
  const current = '"abc"';
  it.each([
    ['"abc"', true],
    ['"x", "abc"', true],
    ['"x","abc"  ,"y"', true],
    ['*', true],
    [' * ', true],
    ['W/"abc"', false],
    ['"abd"', false],
    ['abc', false],
    ['"abc', false],
    ['"abc" junk', false],
    ['', false],
    [',,', false],
  ])('%j → %s', (header, holds) => {
    expect(ifMatchHolds(header, current)).toBe(holds);
  });

  it('never holds without a current representation, not even `*`', () => {
    expect(ifMatchHolds('*', null)).toBe(false);
    expect(ifMatchHolds('"abc"', null)).toBe(false);
  });

  it('repeated headers are one list', () => {
    expect(ifMatchHolds(['"x"', '"abc"'], current)).toBe(true);
  });

  it('a long hostile value is parsed in linear time', () => {
    const header = `${'"a",'.repeat(4000)}"abc"`;
    expect(ifMatchHolds(header, current)).toBe(true);
    expect(ifMatchHolds(`${' '.repeat(16_000)}x`, current)).toBe(false);
  });
});

describe('If-None-Match (weak comparison)', () => {
  const current = '"abc"';
  it.each([
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", W/"abc"', true],
    ['*', true],
    ['"abd"', false],
    ['abc', false],
  ])('%j → %s', (header, matches) => {
    expect(ifNoneMatchMatches(header, current)).toBe(matches);
  });
});
