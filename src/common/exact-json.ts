import type { FieldErrors } from './api-error';
import { addFieldError, countUnnamedField, namesMoreFields, shownKey } from './field-errors';

/**
 * JSON is taken exactly or refused. `JSON.parse` silently turns some numbers
 * into others: `1e400` into Infinity (stored as null), `18446744073709551617`
 * into 18446744073709552000, `1e-400` into 0, `-0` into a zero that is stored
 * as 0 (PostgreSQL's numeric has no negative zero). A number is kept when the
 * double JavaScript holds for it has the same decimal value as the text sent
 * (`1.0`, `1e2`, `0.1`, `1e300` are; the examples above are not). Checked on
 * the text, because after parsing the difference is gone; this works the
 * same on every Node version (no reviver source access needed).
 */

/** The rule in words, for the API description and the fields that hold free-form JSON. */
export const EXACT_JSON_RULES =
  'JSON is stored exactly as sent or refused (422 naming the field): a number whose value a 64-bit float cannot hold as written ' +
  '(`1e400`, `18446744073709551617`, `1e-400`) and `-0` are refused; in free-form objects every key is kept, except `__proto__`, which is refused.';

/** Integers of at most 15 digits are always held exactly: most numbers take this path. */
const SHORT_INTEGER = /^-?(?:0|[1-9]\d{0,14})$/;
/**
 * A plain decimal of at most 20 characters lies between 1e-19 and 1e20, far from
 * overflow and underflow, so it is held exactly when it has at most 15
 * significant digits (a 64-bit float keeps 15): the second fast path.
 */
const SHORT_DECIMAL = /^-?\d+\.\d+$/;
function significantDigits(text: string): number {
  let first = -1;
  let last = -1;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) continue; // '-' and '.'
    if (code !== 48) {
      if (first === -1) first = count;
      last = count;
    }
    count++;
  }
  return first === -1 ? 0 : last - first + 1;
}
/** A JSON number token, anchored where the scanner stands. */
const NUMBER_TOKEN = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
/** Strings (skipped whole, so digits inside them are text) or numbers, in a valid JSON text. */
const STRING_OR_NUMBER = /"[^"\\]*(?:\\.[^"\\]*)*"|-?\d[\d.eE+-]*/g;

/**
 * `sign digits e exponent` with no leading or trailing zero digits: equal keys, equal values.
 * Linear in the text: the zeros are found by loops, not by a regular expression such as
 * `0+$`, which retries at every zero of a long run (seconds on `1.000…0001`).
 */
function decimalKey(text: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return text;
  const fraction = match[3] ?? '';
  const all = match[2] + fraction;
  let start = 0;
  while (start < all.length && all.charCodeAt(start) === 48) start++;
  if (start === all.length) return '0';
  let end = all.length;
  while (all.charCodeAt(end - 1) === 48) end--;
  // BigInt: an exponent of hundreds of digits stays exact (and such a number is refused anyway)
  const exponent = BigInt(match[4] ?? '0') - BigInt(fraction.length) + BigInt(all.length - end);
  return `${match[1]}${all.slice(start, end)}e${exponent}`;
}

/**
 * The longest number text taken: 40 times the longest one a serializer
 * writes for a double (24 characters, `-2.2250738585072014e-308`). A longer
 * one is refused before any arithmetic on it, which keeps the cost of a
 * number linear in its length (docs/decisions.md, "Hostile input: bounded
 * work and answers").
 */
export const MAX_NUMBER_CHARS = 1_000;

/** Why the number written as `text` cannot be kept exactly, or null when it can. */
export function inexactNumberProblem(text: string): string | null {
  if (SHORT_INTEGER.test(text)) return text === '-0' ? NEGATIVE_ZERO : null;
  if (text.length <= 20 && SHORT_DECIMAL.test(text) && significantDigits(text) <= 15) return /^-0\.0*$/.test(text) ? NEGATIVE_ZERO : null;
  if (text.length > MAX_NUMBER_CHARS) return TOO_LONG;
  const value = Number(text);
  if (!Number.isFinite(value)) return OUT_OF_RANGE;
  if (Object.is(value, -0)) return NEGATIVE_ZERO;
  return decimalKey(text) === decimalKey(String(value)) ? null : NOT_EXACT;
}

export const TOO_LONG = `is a number written with more than ${MAX_NUMBER_CHARS} characters: send it as a string`;
export const OUT_OF_RANGE = 'is a number too large to be stored (beyond ±1.7976931348623157e308)';
export const NEGATIVE_ZERO = 'is -0, which would be stored as 0: send 0';
export const NOT_EXACT =
  'is a number that cannot be stored exactly (more significant digits than a 64-bit float holds, or too small): send it as a string, or with at most 15 significant digits';

/** Fast check of a valid JSON text: does any number in it fail `inexactNumberProblem`? */
function hasInexactNumber(text: string): boolean {
  STRING_OR_NUMBER.lastIndex = 0;
  for (let match = STRING_OR_NUMBER.exec(text); match !== null; match = STRING_OR_NUMBER.exec(text)) {
    if (match[0][0] !== '"' && inexactNumberProblem(match[0]) !== null) return true;
  }
  return false;
}

interface Frame {
  path: string;
  array: boolean;
  index: number;
  key: string;
  expectKey: boolean;
}

const childPath = (frame: Frame | undefined): string => {
  if (!frame) return '';
  if (frame.array) return `${frame.path}[${frame.index}]`;
  return frame.path === '' ? frame.key : `${frame.path}.${frame.key}`;
};

/**
 * Every number of a valid JSON text that cannot be kept exactly, by path
 * (`pending_trigger_hint.n`, `items[2]`; `body` for the whole text): the
 * problems to put in a 422, named up to `FIELD_ERROR_BOUNDS` and counted
 * beyond. Empty for almost every text after one regular expression pass; the
 * paths are traced only when there is something to name.
 */
export function inexactNumberPaths(text: string, root = 'body'): FieldErrors {
  const found: FieldErrors = {};
  if (!hasInexactNumber(text)) return found;
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; ) {
    const char = text[i];
    const top = stack[stack.length - 1];
    if (char === '{' || char === '[') {
      stack.push({ path: childPath(top), array: char === '[', index: 0, key: '', expectKey: char === '{' });
      i++;
    } else if (char === '}' || char === ']') {
      stack.pop();
      i++;
    } else if (char === ',') {
      if (top.array) top.index++;
      else top.expectKey = true;
      i++;
    } else if (char === '"') {
      STRING_OR_NUMBER.lastIndex = i;
      const literal = STRING_OR_NUMBER.exec(text)![0];
      if (top && !top.array && top.expectKey) {
        top.key = shownKey(JSON.parse(literal) as string);
        top.expectKey = false;
      }
      i += literal.length;
    } else if (char === '-' || (char >= '0' && char <= '9')) {
      NUMBER_TOKEN.lastIndex = i;
      const literal = NUMBER_TOKEN.exec(text)![0];
      const problem = inexactNumberProblem(literal);
      // past the named fields, a problem is counted and its path never built
      if (problem && namesMoreFields(found)) addFieldError(found, childPath(top) || root, problem);
      else if (problem) countUnnamedField(found);
      i += literal.length;
    } else {
      i++; // whitespace, ':', and the letters of true, false and null
    }
  }
  return found;
}

/**
 * For JSON that arrives already parsed (a fixture handed over as an object):
 * the numbers no JSON text could carry, `-0` and non-finite ones, by path.
 */
export function unstorableNumberPaths(value: unknown, path = '', found: FieldErrors = {}): FieldErrors {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) found[path || 'body'] = [OUT_OF_RANGE];
    else if (Object.is(value, -0)) found[path || 'body'] = [NEGATIVE_ZERO];
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => unstorableNumberPaths(item, `${path}[${i}]`, found));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) unstorableNumberPaths(item, path === '' ? key : `${path}.${key}`, found);
  }
  return found;
}
