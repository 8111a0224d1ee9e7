import { parseDateTime, toQueryBoolean } from './query-values';

describe('parseDateTime: ISO 8601 date-time query values', () => {
  it.each([
    ['2026-03-01T00:00:00Z', '2026-03-01T00:00:00.000Z'],
    ['2026-03-01T02:00:00+02:00', '2026-03-01T00:00:00.000Z'],
    ['2026-03-01T00:00:00.123456Z', '2026-03-01T00:00:00.123Z'],
    ['2026-03-01T00:00', '2026-03-01T00:00:00.000Z'],
    ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
  ])('%s → %s', (value, expected) => {
    expect(parseDateTime(value)?.toISOString()).toBe(expected);
  });

  it.each(['2026-03-01', 'yesterday', '0', '', '2026-02-30T00:00:00Z', '2025-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-03-01T24:00:00Z', '2026-03-01T00:00:00Zjunk'])(
    'rejects %p',
    (value) => {
      expect(parseDateTime(value)).toBeNull();
    },
  );
});

describe('toQueryBoolean: true/false/1/0 only', () => {
  it('maps the four spellings and leaves anything else for the validator to reject', () => {
    expect(['true', '1', 'false', '0', 'TRUE', 'yes', ''].map((value) => toQueryBoolean({ value }))).toEqual([true, true, false, false, 'TRUE', 'yes', '']);
  });
});
