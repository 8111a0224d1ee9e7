/**
 * Failed queries, reported where the driver answers them, whichever engine:
 * metrics count them by SQLSTATE class. The connection owns one reporter;
 * whoever wants to know subscribes (nothing does unless metrics are on).
 */
export class QueryErrorReporter {
  private readonly listeners = new Set<(error: unknown) => void>();

  /** Returns the unsubscribe function. */
  subscribe(listener: (error: unknown) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  report(error: unknown): void {
    for (const listener of this.listeners) listener(error);
  }
}

type AnyQuery = (...args: unknown[]) => unknown;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any driver's query signature
type DriverQuery = (...args: any[]) => unknown;

/**
 * `query` reporting its failures, in the three forms node-postgres and PGlite
 * offer: a trailing callback, a returned promise, or a submittable (returned
 * as is: only cursors use it, and they report through their own events).
 */
export function reportingQuery<Q extends DriverQuery>(query: Q, reporter: QueryErrorReporter): Q {
  return function (this: unknown, ...args: unknown[]) {
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: unknown, ...rest: unknown[]) => {
        if (error) reporter.report(error);
        return (callback as AnyQuery)(error, ...rest);
      };
      return (query as AnyQuery).apply(this, args);
    }
    const result = (query as AnyQuery).apply(this, args);
    if (result && typeof (result as Promise<unknown>).then === 'function' && typeof (result as { submit?: unknown }).submit !== 'function') {
      // a side branch: the caller still gets (and handles) the original rejection
      (result as Promise<unknown>).then(undefined, (error: unknown) => reporter.report(error));
    }
    return result;
  } as Q;
}
