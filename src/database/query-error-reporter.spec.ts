import { QueryErrorReporter, reportingQuery } from './query-error-reporter';

const failure = Object.assign(new Error('duplicate key'), { code: '23505' });

function collect(): { reporter: QueryErrorReporter; seen: unknown[] } {
  const reporter = new QueryErrorReporter();
  const seen: unknown[] = [];
  reporter.subscribe((error) => seen.push(error));
  return { reporter, seen };
}

describe('reportingQuery: every failed query is reported once, and the caller still gets it', () => {
  test('promise form', async () => {
    const { reporter, seen } = collect();
    const query = reportingQuery(async (text: unknown) => {
      if (text === 'bad') throw failure;
      return { rows: [] };
    }, reporter);
    await expect(query('good')).resolves.toEqual({ rows: [] });
    await expect(query('bad')).rejects.toBe(failure);
    expect(seen).toEqual([failure]);
  });

  test('callback form, with or without values', async () => {
    const { reporter, seen } = collect();
    const query = reportingQuery((...args: unknown[]) => {
      const callback = args[args.length - 1] as (e: unknown, r?: unknown) => void;
      setImmediate(() => (args[0] === 'bad' ? callback(failure) : callback(null, { rows: [1] })));
    }, reporter);
    const results: unknown[] = [];
    await new Promise<void>((resolve) => query('good', [1], (e: unknown, r: unknown) => (results.push([e, r]), resolve())));
    await new Promise<void>((resolve) => query('bad', (e: unknown) => (results.push([e]), resolve())));
    expect(results).toEqual([[null, { rows: [1] }], [failure]]);
    expect(seen).toEqual([failure]);
  });

  test('a subscriber that left hears nothing', async () => {
    const reporter = new QueryErrorReporter();
    const seen: unknown[] = [];
    const leave = reporter.subscribe((error) => seen.push(error));
    leave();
    await expect(reportingQuery(() => Promise.reject(failure), reporter)()).rejects.toBe(failure);
    expect(seen).toEqual([]);
  });
});
