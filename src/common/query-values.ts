/**
 * Transforms for query-string values (class-transformer `@Transform`). A value
 * that does not parse becomes a sentinel the validators reject, so the 422
 * names the parameter instead of the value silently turning into a default.
 */
import { BOUNDS } from './input-bounds';

/** RFC 3339 date-time; the offset may be omitted (then UTC). Date-only values are not date-times. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?$/;

/** Parses an ISO 8601 date-time query value; null when it is not one (or not a real calendar time). */
export function parseDateTime(value: string): Date | null {
  const match = DATE_TIME.exec(value);
  if (!match) return null;
  const [, year, month, day, hour, minute, second] = match.map(Number) as number[];
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || (second ?? 0) > 59) return null;
  const normalized = match[7] ? value : `${value}Z`;
  const date = new Date(normalized.replace(' ', 'T'));
  if (Number.isNaN(date.getTime())) return null;
  // reject rollovers such as 2024-02-31 (Date would turn them into March)
  const probe = new Date(Date.UTC(year, month - 1, day));
  if (probe.getUTCDate() !== day) return null;
  return date;
}

/**
 * `@Transform` for date-time query params: Date, or an Invalid Date that
 * `@IsDate` rejects (also for values longer than `BOUNDS.dateTime`).
 */
export function toQueryDate({ value }: { value: unknown }): unknown {
  if (value === undefined) return undefined;
  return (typeof value === 'string' && value.length <= BOUNDS.dateTime && parseDateTime(value)) || new Date(Number.NaN);
}

/** The 422 message of a date-time query param that `toQueryDate` did not accept. */
export const QUERY_DATE_MESSAGE = {
  message: `$property must be an ISO 8601 date-time of at most ${BOUNDS.dateTime} characters, e.g. 2026-01-31T12:00:00Z`,
};

/** OpenAPI schema of a date-time query param. */
export const QUERY_DATE_SCHEMA = { type: 'string', format: 'date-time', maxLength: BOUNDS.dateTime } as const;

/** Strict integer parsing: `1.5`, `abc`, `1e2`, repeated params and blanks are not integers. */
export function toStrictInt({ value }: { value: unknown }): unknown {
  if (value === undefined) return undefined;
  return typeof value === 'string' && /^-?\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
}

/** `@Transform` for boolean query flags: `true`/`1` and `false`/`0` (documented in docs/decisions.md); anything else stays a non-boolean. */
export function toQueryBoolean({ value }: { value: unknown }): unknown {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return value;
}
