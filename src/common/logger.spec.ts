import { createLogger, warnRepeated } from './logger';

/**
 * A warning that may repeat for every request (a database outage, a
 * tenant's own flood) is written once per 10 s per kind, the next line
 * counting those left out, so a flood of 503s is a few lines, not one each.
 */
describe('warnRepeated', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  function capture() {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    return { logger, lines };
  }

  test('one line per kind per 10 s; the next one says how many were left out', () => {
    const { logger, lines } = capture();
    for (let i = 0; i < 500; i++) warnRepeated(logger, { request_id: `r${i}` }, 'database unavailable');
    // another kind has its own budget
    warnRepeated(logger, { request_id: 'q' }, "request deadline spent waiting in its tenant's queue");
    expect(lines.map((line) => [line.msg, line.request_id, line.repeated])).toEqual([
      ['database unavailable', 'r0', undefined],
      ["request deadline spent waiting in its tenant's queue", 'q', undefined],
    ]);
    jest.advanceTimersByTime(9_999);
    warnRepeated(logger, { request_id: 'still' }, 'database unavailable');
    expect(lines).toHaveLength(2);
    jest.advanceTimersByTime(1);
    warnRepeated(logger, { request_id: 'next' }, 'database unavailable');
    expect(lines[2]).toMatchObject({ level: 'warn', msg: 'database unavailable', request_id: 'next', repeated: 500 });
    // the count starts again from there
    jest.advanceTimersByTime(10_000);
    warnRepeated(logger, { request_id: 'later' }, 'database unavailable');
    expect(lines[3]).toMatchObject({ request_id: 'later' });
    expect(lines[3]).not.toHaveProperty('repeated');
  });
});
