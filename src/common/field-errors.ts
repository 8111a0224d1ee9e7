import type { ApiError, FieldErrors } from './api-error';

/**
 * What one answer may name, whatever the request holds (docs/decisions.md,
 * "Hostile input: bounded work and answers"): a body of a megabyte can hold
 * a hundred thousand bad values, and an answer naming each would be many
 * times the request, built and stored at its cost. Past these bounds the
 * fields are counted, not named (`details.field_count`).
 */
export const FIELD_ERROR_BOUNDS = {
  /** fields named in one answer */
  fields: 100,
  /** problems kept per field (a field never has more than a few distinct ones) */
  problemsPerField: 5,
  /** characters of a field path as shown; a longer one is cut and ends with `…` */
  path: 200,
  /** characters of a client's key inside a path or a problem (`property <key> should not exist`) */
  key: 100,
  /** characters of one problem */
  problem: 500,
  /** characters of paths and problems named in one answer: with the bounds above, a 422 stays under 24 KiB */
  text: 16_384,
} as const;

/** Fields with a problem that were counted but not named, beyond `FIELD_ERROR_BOUNDS.fields`. */
const UNNAMED = Symbol('fields counted but not named');
/** Characters of the paths and problems named so far, against `FIELD_ERROR_BOUNDS.text`. */
const NAMED_TEXT = Symbol('characters named');
type Counted = FieldErrors & { [UNNAMED]?: number; [NAMED_TEXT]?: number };

/** Sets one of the map's counters; not enumerable, so the map still serializes, compares and iterates as its named fields. */
function setCounter(fields: FieldErrors, counter: typeof UNNAMED | typeof NAMED_TEXT, value: number): void {
  const counted = fields as Counted;
  if (counter in counted) counted[counter] = value;
  else Object.defineProperty(counted, counter, { value, enumerable: false, writable: true, configurable: true });
}

function namedText(fields: FieldErrors): number {
  return (fields as Counted)[NAMED_TEXT] ?? 0;
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A client's key as a path segment or inside a problem: at most `FIELD_ERROR_BOUNDS.key` characters. */
export function shownKey(key: string): string {
  return shorten(key, FIELD_ERROR_BOUNDS.key);
}

/** Whether a new field would still be named: a producer of many problems builds no path once it would not be. */
export function namesMoreFields(fields: FieldErrors): boolean {
  return namedText(fields) < FIELD_ERROR_BOUNDS.text && Object.keys(fields).length < FIELD_ERROR_BOUNDS.fields;
}

/** Counts a field with a problem without naming it (its path need not be built). */
export function countUnnamedField(fields: FieldErrors, how = 1): void {
  setCounter(fields, UNNAMED, ((fields as Counted)[UNNAMED] ?? 0) + how);
}

/** How many fields have a problem: the named ones and those only counted. */
export function fieldCount(fields: FieldErrors): number {
  return Object.keys(fields).length + ((fields as Counted)[UNNAMED] ?? 0);
}

/**
 * The one way problems are collected by field, in the API (one 422 naming
 * every bad field, up to `FIELD_ERROR_BOUNDS`) and in the fixture loader
 * (which names the first). Field names may come from a client's keys
 * (`config.__proto__`), so a key is always an own property of the map,
 * never one of Object.prototype.
 */
export function addFieldError(fields: FieldErrors, field: string, problem: string): void {
  const path = shorten(field, FIELD_ERROR_BOUNDS.path);
  const text = shorten(problem, FIELD_ERROR_BOUNDS.problem);
  if (Object.prototype.hasOwnProperty.call(fields, path)) {
    const problems = fields[path];
    if (problems.length >= FIELD_ERROR_BOUNDS.problemsPerField || namedText(fields) >= FIELD_ERROR_BOUNDS.text || problems.includes(text)) return;
    problems.push(text);
    setCounter(fields, NAMED_TEXT, namedText(fields) + text.length);
  } else if (namesMoreFields(fields)) {
    Object.defineProperty(fields, path, { value: [text], enumerable: true, writable: true, configurable: true });
    setCounter(fields, NAMED_TEXT, namedText(fields) + path.length + text.length);
  } else {
    countUnnamedField(fields);
  }
}

/** Adds every problem of `more` to `fields` (problems of one field are kept side by side); returns `fields`. */
export function mergeFieldErrors(fields: FieldErrors, ...more: FieldErrors[]): FieldErrors {
  for (const other of more) {
    for (const [field, problems] of Object.entries(other)) for (const problem of problems) addFieldError(fields, field, problem);
    const unnamed = (other as Counted)[UNNAMED];
    if (unnamed) countUnnamedField(fields, unnamed);
  }
  return fields;
}

export function hasFieldErrors(fields: FieldErrors): boolean {
  return fieldCount(fields) > 0;
}

/**
 * The one result of a rule in a `<resource>.rules.ts`: the value (with what
 * else the rule hands the service, `Extra`), or its refusal. A rule never
 * throws; the service turns a refusal into its answer with `accepted`
 * (`src/common/api-error.ts`), the fixture loader into its first problem.
 */
export type Checked<T, Extra = unknown> = ({ ok: true; value: T } & Extra) | Refusal;

/**
 * Every problem by field (what the fixture loader names, and what a service
 * may merge with problems of its own), and `answer` where the API's answer
 * is not the plain 422 naming them (a plan cap's `limit` and `max`, a 409).
 */
export interface Refusal {
  ok: false;
  fields: FieldErrors;
  answer?: ApiError;
}

export function refused(fields: FieldErrors, answer?: ApiError): Refusal {
  return answer ? { ok: false, fields, answer } : { ok: false, fields };
}
