import { newTraceId, parseTraceparent, resolveTraceId } from './trace-context';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const VALID = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

describe('parseTraceparent: the trace id of a valid W3C traceparent', () => {
  test.each([
    [VALID],
    [`00-${TRACE_ID}-00f067aa0ba902b7-00`],
    // surrounding whitespace is the header's, not the value's
    [`  ${VALID} `],
    // a later version may carry more fields; its first four read as version 00
    [`01-${TRACE_ID}-00f067aa0ba902b7-01`],
    [`cc-${TRACE_ID}-00f067aa0ba902b7-01-what-the-future-holds`],
  ])('%j', (header) => {
    expect(parseTraceparent(header)).toBe(TRACE_ID);
  });

  test.each([
    [undefined],
    [''],
    ['garbage'],
    // version ff is forbidden
    [`ff-${TRACE_ID}-00f067aa0ba902b7-01`],
    // version 00 has exactly four fields
    [`${VALID}-extra`],
    [`${VALID}x`],
    // all-zero ids are invalid
    [`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    [`00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    // uppercase hex is not allowed
    [`00-${TRACE_ID.toUpperCase()}-00f067aa0ba902b7-01`],
    // wrong lengths
    [`00-${TRACE_ID.slice(1)}-00f067aa0ba902b7-01`],
    [`00-${TRACE_ID}-00f067aa0ba902b-01`],
    [`00-${TRACE_ID}-00f067aa0ba902b7-1`],
    [`0-${TRACE_ID}-00f067aa0ba902b7-01`],
    // not hex
    [`00-${'g'.repeat(32)}-00f067aa0ba902b7-01`],
    // two headers
    [[VALID, VALID]],
    [`${VALID}, ${VALID}`],
  ])('%j is not valid', (header) => {
    expect(parseTraceparent(header)).toBeNull();
  });
});

describe('resolveTraceId', () => {
  test('keeps the incoming trace id', () => {
    expect(resolveTraceId(VALID)).toBe(TRACE_ID);
  });

  test('starts a new trace without a header or with an invalid one: 32 lowercase hex, not all zero, new each time', () => {
    const ids = [resolveTraceId(undefined), resolveTraceId('nonsense'), resolveTraceId(`ff-${TRACE_ID}-00f067aa0ba902b7-01`), newTraceId()];
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{32}$/);
      expect(id).not.toBe('0'.repeat(32));
      expect(id).not.toBe(TRACE_ID);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('ids stay distinct across refills of the random pool', () => {
    const ids = Array.from({ length: 1000 }, () => newTraceId());
    expect(new Set(ids).size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
  });
});
