import { types, type PGlite, type QueryOptions, type Transaction } from '@electric-sql/pglite';
import { QueryErrorReporter, reportingQuery } from './query-error-reporter';
import { ClsServiceManager } from 'nestjs-cls';

/**
 * The types drizzle-orm's PGlite driver asks to receive as text (it maps
 * them itself): timestamps, dates, intervals and their arrays, and numeric[].
 */
const DRIZZLE_TEXT_TYPES: ReadonlySet<number> = new Set([
  types.TIMESTAMP,
  types.TIMESTAMPTZ,
  types.INTERVAL,
  types.DATE,
  1231, // numeric[]
  1115, // timestamp[]
  1185, // timestamptz[]
  1187, // interval[]
  1182, // date[]
]);

const asText = (value: string): string => value;
const PROBE = '2026-01-01 00:00:00+00';

type Queryable = Pick<PGlite, 'query'>;

/**
 * The PGlite client drizzle is given: an object of ours with the two methods
 * drizzle's PGlite driver calls, `query` and `transaction`.
 *
 * - PGlite copies its whole parser table for every query that carries
 *   drizzle's `parsers` option; here those identity text parsers are
 *   installed once and the per-query option is dropped when it asks for
 *   exactly them (same rows, no copy; the cost is in docs/performance.md).
 * - A statement on the root database, or a second transaction, issued from
 *   inside an open transaction fails at once: PGlite has one connection, and
 *   it would wait for that transaction to end while the transaction waits
 *   for it (a deadlock no timeout ends). Inside a transaction, statements go
 *   to its `tx` (`TransactionHost.tx`). Other work — another request, work
 *   left running after the transaction's callback — waits its turn.
 * - Failed queries are reported (metrics); a query on a closed PGlite fails
 *   with SQLSTATE 08003 (connection does not exist), so it answers 503.
 */
export function drizzlePgliteClient(client: PGlite, queryErrors = new QueryErrorReporter()): PGlite {
  for (const oid of DRIZZLE_TEXT_TYPES) client.parsers[oid] = asText;
  const direct = reportingQuery(withoutTextParsers(client, client), queryErrors);
  const adapter = {
    query: async (query: string, params?: unknown[], options?: QueryOptions) => {
      refuseInsideTransaction('a statement on the root database');
      return direct(query, params, options);
    },
    transaction: async <T>(callback: (tx: Transaction) => Promise<T>) => {
      refuseInsideTransaction('a second transaction');
      return client.transaction((tx) => {
        const own: Queryable = { query: reportingQuery(withoutTextParsers(tx, client), queryErrors) };
        return insideTransaction(() => callback(own as Transaction));
      });
    },
    // drizzle reads nothing else of its client; parsers for tests
    parsers: client.parsers,
  };
  return adapter as unknown as PGlite;
}

/** Where the context records that it is inside a transaction of the embedded database: this module's own key. */
const INSIDE_TRANSACTION = Symbol('inside an embedded database transaction');

/** Runs `callback` marked as inside the transaction; the mark is lifted before COMMIT, so work it leaves running waits its turn. */
async function insideTransaction<T>(callback: () => Promise<T>): Promise<T> {
  const cls = ClsServiceManager.getClsService();
  const mark = { open: true };
  return cls.run({ ifNested: 'inherit' }, async () => {
    cls.set(INSIDE_TRANSACTION, mark);
    try {
      return await callback();
    } finally {
      mark.open = false;
    }
  });
}

function refuseInsideTransaction(what: string): void {
  const cls = ClsServiceManager.getClsService();
  const mark = cls.isActive() ? (cls.get(INSIDE_TRANSACTION) as { open: boolean } | undefined) : undefined;
  if (mark?.open) {
    throw new Error(`${what} inside an open transaction would wait for it forever (the embedded database has one connection): run it on the transaction (txHost.tx)`);
  }
}

const plainOptions = new WeakMap<QueryOptions, QueryOptions | undefined>();

function withoutTextParsers(target: Queryable, owner: PGlite): PGlite['query'] {
  return (async (query: string, params?: unknown[], options?: QueryOptions) => {
    if (owner.closed) throw Object.assign(new Error('the embedded database is closed'), { code: '08003' });
    return target.query(query, params, options?.parsers ? plain(options) : options);
  }) as PGlite['query'];
}

/** The options without `parsers` when those only keep text types as text (drizzle's); computed once per options object. */
function plain(options: QueryOptions): QueryOptions | undefined {
  if (plainOptions.has(options)) return plainOptions.get(options);
  const parsers = options.parsers ?? {};
  const onlyText = Object.entries(parsers).every(([oid, parse]) => DRIZZLE_TEXT_TYPES.has(Number(oid)) && parse(PROBE, Number(oid)) === PROBE);
  const result = onlyText ? { ...options, parsers: undefined } : options;
  plainOptions.set(options, result);
  return result;
}
