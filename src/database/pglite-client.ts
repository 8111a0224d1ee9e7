import { types, type PGlite, type QueryOptions, type Transaction } from '@electric-sql/pglite';
import { openRequestTransaction } from './request-scope';

/**
 * The types drizzle-orm's PGlite driver asks to receive as text (it maps
 * them itself): timestamps, dates, intervals and their arrays, and numeric[].
 */
export const DRIZZLE_TEXT_TYPES: ReadonlySet<number> = new Set([
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
 * The PGlite client drizzle is given. PGlite copies its whole parser table
 * for every query that carries drizzle's `parsers` option; here those
 * identity text parsers are installed once and the per-query option is
 * dropped when it asks for exactly them (same rows, no copy; the cost is in
 * docs/performance.md). Anything else passes through untouched.
 */
export function drizzlePgliteClient(client: PGlite): PGlite {
  for (const oid of DRIZZLE_TEXT_TYPES) client.parsers[oid] = asText;
  const adapter = Object.create(null) as Pick<PGlite, 'query' | 'transaction'> & { parsers: PGlite['parsers'] };
  const direct = withoutTextParsers(client);
  // a query issued while a request transaction is open runs in it: PGlite has one connection, and
  // a query outside the open transaction would wait for it to end (the request awaiting it: deadlock)
  adapter.query = ((query: string, params?: unknown[], options?: QueryOptions) => {
    const open = openRequestTransaction();
    return open ? (open.client as Transaction).query(query, params, options) : direct(query, params, options);
  }) as PGlite['query'];
  adapter.transaction = (callback) => client.transaction((tx) => callback(transactionWithoutTextParsers(tx)));
  // drizzle reads nothing else of its client but `query` and `transaction`; parsers for tests
  adapter.parsers = client.parsers;
  return adapter as unknown as PGlite;
}

function transactionWithoutTextParsers(tx: Transaction): Transaction {
  // the transaction object is made of closures: inherit it, override query
  const wrapped = Object.create(tx) as Transaction;
  Object.defineProperty(wrapped, 'query', { value: withoutTextParsers(tx) });
  return wrapped;
}

const plainOptions = new WeakMap<QueryOptions, QueryOptions | undefined>();

function withoutTextParsers(target: Queryable): PGlite['query'] {
  return ((query: string, params?: unknown[], options?: QueryOptions) =>
    target.query(query, params, options?.parsers ? plain(options) : options)) as PGlite['query'];
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
