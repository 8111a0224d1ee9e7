import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ValidateBy, ValidateIf, type ValidationOptions, type ValidatorOptions } from 'class-validator';
import { ApiError, type FieldErrors } from './api-error';
import { addFieldError, mergeFieldErrors } from './field-errors';
import { BOUNDS } from './input-bounds';

/**
 * A DTO field that may be left out but, when present, may not be null
 * (class-validator's `@IsOptional()` lets null through as well).
 */
export const OptionalNonNull = () => ValidateIf((_object: object, value: unknown) => value !== undefined);

/** Any CSS hex color: `#rgb`, `#rgba`, `#rrggbb` or `#rrggbbaa` (agents, fixtures and custom tool groups alike). */
export const HEX_COLOR_PATTERN = /^#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;
export const HEX_COLOR_DESCRIPTION = 'A CSS hex color: `#rgb`, `#rgba`, `#rrggbb` or `#rrggbbaa`.';

/**
 * RFC 3339 `date-time` (section 5.6): date, `T`, time with seconds, optional
 * fraction, and a zone (`Z` or `±hh:mm`). The letters may be lower case
 * (RFC 3339 note in 5.6); a leap second (`:60`) is refused because no stored
 * timestamp can hold it.
 */
const RFC3339_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/** Whether `value` is a full RFC 3339 date-time that names a real instant (no 2026-02-30, no 24:00). */
export function isRfc3339DateTime(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > BOUNDS.dateTime) return false;
  const match = RFC3339_DATE_TIME.exec(value);
  if (!match) return false;
  const [, year, month, day, hour, minute, second, offsetHour, offsetMinute] = match.map((part) => (part === undefined ? 0 : Number(part))) as number[];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59 || offsetHour > 23 || offsetMinute > 59) return false;
  // the day must exist in that month (Date.UTC would roll 2026-02-30 over into March)
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return false;
  return !Number.isNaN(new Date(value.toUpperCase()).getTime());
}

export const DATE_TIME_DESCRIPTION = `An RFC 3339 date-time with a zone, e.g. \`2026-01-31T12:00:00Z\` (at most ${BOUNDS.dateTime} characters).`;

/**
 * The one validator of date-time values in request bodies and fixtures: a
 * full RFC 3339 date-time. A date alone (`2026-01-01`) or a time without a
 * zone is refused, because either would silently pick an instant.
 */
export const IsDateTime = (options?: ValidationOptions) =>
  ValidateBy(
    {
      name: 'isDateTime',
      validator: {
        validate: (value: unknown) => isRfc3339DateTime(value),
        defaultMessage: () => '$property must be an RFC 3339 date-time with a zone, such as 2026-01-31T12:00:00Z',
      },
    },
    options,
  );

/** class-validator options of every request DTO (bodies and queries). */
const VALIDATOR_OPTIONS: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  // the value is read by flattenValidationErrors (is the field missing?) and never rendered
  validationError: { target: false, value: true },
};

/**
 * Query strings: known parameters are validated like bodies, unknown ones
 * are ignored (stripped before the handler sees them) on every endpoint —
 * docs/decisions.md "Unknown query parameters".
 */
export const QUERY_VALIDATOR_OPTIONS: ValidatorOptions = { ...VALIDATOR_OPTIONS, forbidNonWhitelisted: false };

/** Constraints that say what kind of value a field takes: when one fails, the field's other rules are noise. */
const KIND_CONSTRAINTS = ['isDefined', 'isString', 'isInt', 'isNumber', 'isBoolean', 'isArray', 'isObject', 'isIn', 'isEnum', 'isDate', 'isDateTime'];

/**
 * One message per problem: a missing field or a value of the wrong kind is
 * reported by its kind rule alone (not also by the length or range rules its
 * value cannot meet), and rules that share a message are reported once
 * (`limit=abc`: integer, minimum and maximum say the same thing).
 */
function problemsOf(constraints: Record<string, string>): string[] {
  const kind = KIND_CONSTRAINTS.find((name) => name in constraints);
  return kind ? [constraints[kind]] : [...new Set(Object.values(constraints))];
}

const UNKNOWN_KEYS_UNNAMED = Symbol('unknown-keys-unnamed');

/**
 * A body class whose unknown keys are refused without their names: an
 * object of secrets, where a client may paste a secret as a key name
 * (`{"sk-live-…": ""}`). The 422 names the object itself with `message`, so
 * the name is neither answered nor kept in a stored idempotency record.
 */
export function UnknownKeysUnnamed(message: string): ClassDecorator {
  return (target) => Reflect.defineMetadata(UNKNOWN_KEYS_UNNAMED, message, target);
}

/** The message for an unknown key of `holder`, when its class does not name them; undefined otherwise. */
export function unnamedKeysMessage(holder: unknown): string | undefined {
  if (holder === null || typeof holder !== 'object') return undefined;
  return Reflect.getMetadata(UNKNOWN_KEYS_UNNAMED, holder.constructor) as string | undefined;
}

/** class-validator's error tree → `{ "tools[0].name": ["must be a string"] }`. `holder`: the object the errors are about. */
export function flattenValidationErrors(errors: ValidationError[], parent = '', holder?: unknown): FieldErrors {
  const fields: FieldErrors = {};
  const unnamed = unnamedKeysMessage(holder);
  for (const error of errors) {
    const path = parent === '' ? error.property : /^\d+$/.test(error.property) ? `${parent}[${error.property}]` : `${parent}.${error.property}`;
    if (unnamed !== undefined && error.constraints && 'whitelistValidation' in error.constraints) {
      // once however many unknown keys there are
      if (!Object.prototype.hasOwnProperty.call(fields, parent)) addFieldError(fields, parent, unnamed);
      continue;
    }
    if (error.constraints) {
      const problems = problemsOf(error.constraints);
      // a missing field whose rules have no kind rule (only lengths, patterns…): say it is missing
      fields[path] = error.value === undefined && !KIND_CONSTRAINTS.some((name) => name in error.constraints!) ? [`${error.property} is required`] : problems;
    }
    if (error.children?.length) mergeFieldErrors(fields, flattenValidationErrors(error.children, path, error.value));
  }
  return fields;
}

/** Deeper than any body the API takes (free-form objects included), far below the stack's limit. */
export const MAX_BODY_DEPTH = 32;

/** Nesting depth of a parsed JSON value, counted without recursion; stops once past `limit`. */
export function nestingDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    const level = depth + 1;
    if (level > deepest) deepest = level;
    if (deepest > limit) return deepest;
    for (const child of Object.values(node)) if (child !== null && typeof child === 'object') stack.push([child, level]);
  }
  return deepest;
}

function isEmptyObject(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  for (const _key in value) return false;
  return Object.getOwnPropertySymbols(value).length === 0;
}

const NUL = '\u0000';
const NUL_PROBLEM = 'must not contain the NUL character (U+0000)';
const UNPAIRED_PROBLEM = 'must be valid UTF-8 text (no invalid bytes, no unpaired surrogate such as \\ud800)';
/** Unpaired UTF-16 surrogates: what a `\ud800` escape, or an invalid UTF-8 byte (request-body.ts), becomes. */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNPAIRED_SURROGATES = new RegExp(UNPAIRED_SURROGATE.source, 'g');

function textProblem(text: string): string | null {
  if (text.includes(NUL)) return NUL_PROBLEM;
  return UNPAIRED_SURROGATE.test(text) ? UNPAIRED_PROBLEM : null;
}

/** A key as a path segment: NUL and unpaired surrogates escaped, so the message stays printable. */
function shownKey(key: string): string {
  return key
    .split(NUL)
    .join('\\u0000')
    .replace(UNPAIRED_SURROGATES, (unit) => `\\u${unit.charCodeAt(0).toString(16)}`);
}

/**
 * Every string (and object key) PostgreSQL cannot store as sent, by path:
 * U+0000 (JSON allows it, text and jsonb do not: unchecked, it fails in the
 * database as a 500), and unpaired surrogates, which the driver would turn
 * into U+FFFD, storing something the client did not send.
 */
export function unstorableTextPaths(value: unknown, path = '', found: FieldErrors = {}): FieldErrors {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    if (problem) found[path === '' ? 'body' : path] = [problem];
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => unstorableTextPaths(item, `${path}[${i}]`, found));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const itemPath = path === '' ? shownKey(key) : `${path}.${shownKey(key)}`;
      const problem = textProblem(key);
      if (problem) found[itemPath] = [problem];
      else unstorableTextPaths(item, itemPath, found);
    }
  }
  return found;
}

// ---------- JSON taken exactly: every key name ----------

const PROTO_KEY_PROBLEM = 'must not be used as a key: JavaScript reads __proto__ as the prototype of an object, not as a field';

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
/** A DTO instance (class-transformer built it from a class), as opposed to its plain copy of free-form JSON. */
const isDtoInstance = (value: unknown): boolean => isRecord(value) && value.constructor !== Object;
const keyPath = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);
/** `found[path] = problems` as an own property even when the path is `__proto__` (an assignment would set the prototype). */
const putField = (found: FieldErrors, path: string, problems: string[]) =>
  Object.defineProperty(found, path, { value: problems, enumerable: true, writable: true, configurable: true });

/**
 * Keys that the base ValidationPipe deletes (`__proto__`, `prototype`,
 * `constructor`) or class-transformer skips (any member of Object.prototype):
 * without one, the DTO holds everything that was sent and there is nothing to judge.
 */
function isKeyTheBuilderDrops(key: string): boolean {
  return key === 'prototype' || Object.prototype.hasOwnProperty.call(Object.prototype, key);
}

export function hasKeyTheBuilderDrops(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    for (const key of Object.keys(node)) {
      if (!Array.isArray(node) && isKeyTheBuilderDrops(key)) return true;
      stack.push((node as Record<string, unknown>)[key]);
    }
  }
  return false;
}

/**
 * A deep copy without the keys the builder drops, for building a DTO from:
 * class-transformer fails outright on a `constructor` key holding an object.
 * `keepJsonAsSent` then judges what was sent against what was built.
 */
export function withoutKeysTheBuilderDrops(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutKeysTheBuilderDrops);
  if (!isRecord(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) if (!isKeyTheBuilderDrops(key)) copy[key] = withoutKeysTheBuilderDrops(value[key]);
  return copy;
}

/** `__proto__` keys anywhere in free-form JSON, by path. */
function protoKeyPaths(value: unknown, path: string, found: FieldErrors): void {
  if (Array.isArray(value)) value.forEach((item, i) => protoKeyPaths(item, `${path}[${i}]`, found));
  else if (isRecord(value)) {
    for (const key of Object.keys(value)) {
      if (key === '__proto__') putField(found, keyPath(path, key), [PROTO_KEY_PROBLEM]);
      else protoKeyPaths(value[key], keyPath(path, key), found);
    }
  }
}

/** One value of a DTO field: nested DTOs are walked, free-form JSON is put back exactly as sent. */
function keepFieldAsSent(raw: unknown, holder: Record<string, unknown> | unknown[], slot: string | number, path: string, found: FieldErrors): void {
  const built = (holder as Record<string, unknown>)[slot];
  if (isDtoInstance(built)) keepJsonAsSent(raw, built as object, path, found);
  else if (Array.isArray(raw) && Array.isArray(built) && built.some(isDtoInstance)) raw.forEach((item, i) => keepFieldAsSent(item, built, i, `${path}[${i}]`, found));
  else if (raw !== null && typeof raw === 'object') {
    (holder as Record<string, unknown>)[slot] = raw;
    protoKeyPaths(raw, path, found);
  }
}

/**
 * class-transformer builds a DTO from the parsed body, and skips every key
 * named like a member of `Object.prototype` (`constructor`, `toString`,
 * `hasOwnProperty`…) or `__proto__`: unchecked, such a key is neither refused
 * as unknown nor kept. This walks what was sent beside what was built:
 * - in a DTO, a key that did not arrive is an unknown field, refused with
 *   the whitelist's own words (`__proto__` included);
 * - free-form JSON (a plain object or array in a DTO field: metadata, hints,
 *   config, headers) is put back exactly as sent, every key name kept,
 *   except `__proto__`, refused by path, since any later copy of the object
 *   in JavaScript would turn it into a prototype.
 * Returns the problems by path; the validation pipe and the fixture loader
 * refuse on any.
 */
export function keepJsonAsSent(raw: unknown, built: object, path = '', found: FieldErrors = {}): FieldErrors {
  if (!isRecord(raw)) return found;
  const instance = built as Record<string, unknown>;
  const unnamed = unnamedKeysMessage(built);
  for (const key of Object.keys(raw)) {
    if (!Object.prototype.hasOwnProperty.call(instance, key)) putField(found, unnamed !== undefined ? path : keyPath(path, key), [unnamed ?? `property ${key} should not exist`]);
    else keepFieldAsSent(raw[key], instance, key, keyPath(path, key), found);
  }
  return found;
}

const BODY_PRECHECK = Symbol('body-precheck');

/**
 * A rule of a body class judged before its fields are validated, for a rule
 * that must win whatever else the body holds (POST /sources: `type` =
 * `upload` is a 409 even with other fields invalid). `precheck` receives the
 * parsed JSON object and throws an ApiError to refuse it; the validation
 * pipe runs it for every body of the decorated class.
 */
export function BodyPrecheck(precheck: (body: Record<string, unknown>) => void): ClassDecorator {
  return (target) => Reflect.defineMetadata(BODY_PRECHECK, precheck, target);
}

function precheckOf(metatype: unknown): ((body: Record<string, unknown>) => void) | undefined {
  return typeof metatype === 'function' ? (Reflect.getMetadata(BODY_PRECHECK, metatype) as ((body: Record<string, unknown>) => void) | undefined) : undefined;
}

/**
 * Global pipe: whitelisted DTOs only (unknown fields → 422, no silent mass
 * assignment), class-validator failures → 422 `validation_failed` naming the
 * fields, a body that is not a JSON object → 422 as well, and so is any
 * string holding U+0000 or an unpaired surrogate (before it reaches PostgreSQL).
 */
@Injectable()
export class ApiValidationPipe extends ValidationPipe {
  /** the same pipe for query strings, except that unknown parameters are stripped instead of refused */
  private readonly queryPipe = new ValidationPipe({
    ...QUERY_VALIDATOR_OPTIONS,
    transform: true,
    exceptionFactory: (errors) => ApiError.validation(flattenValidationErrors(errors)),
  });

  constructor() {
    super({
      ...VALIDATOR_OPTIONS,
      transform: true,
      exceptionFactory: (errors) => ApiError.validation(flattenValidationErrors(errors)),
    });
  }

  /** query DTO class → whether `{}` passed its validation (it always will again: nothing in it varies) */
  private readonly emptyQueryValid = new WeakMap<object, boolean>();

  private emptyQueryIsValid(metatype: new () => object): boolean {
    let valid = this.emptyQueryValid.get(metatype);
    if (valid === undefined) {
      // decided on first use, synchronously enough: until then requests take the full path
      valid = false;
      this.emptyQueryValid.set(metatype, false);
      super.transform({}, { type: 'query', metatype }).then(
        (instance) => this.emptyQueryValid.set(metatype, instance instanceof metatype && Object.keys(instance).length === Object.keys(new metatype()).length),
        () => this.emptyQueryValid.set(metatype, false),
      );
    }
    return valid;
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const isDto = typeof metadata.metatype === 'function' && ![String, Number, Boolean, Array, Object].includes(metadata.metatype as never);
    // class-transformer recurses once per level: 10,000 levels overflow the stack (a 500)
    if (metadata.type === 'body' && !Buffer.isBuffer(value) && nestingDepth(value, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      throw ApiError.validation({ body: [`nests deeper than ${MAX_BODY_DEPTH} levels`] });
    }
    if (metadata.type === 'body' && isDto) {
      if (value === undefined) value = {};
      // a Buffer is a body of another Content-Type, read only for the idempotency fingerprint
      if (typeof value !== 'object' || value === null || Array.isArray(value) || Buffer.isBuffer(value)) {
        throw ApiError.validation({ body: ['must be a JSON object'] });
      }
      precheckOf(metadata.metatype)?.(value as Record<string, unknown>);
    }
    if (metadata.type === 'query' && isDto && (value === undefined || value === null)) value = {};
    // no query at all (most list requests): class-transformer would build a bare
    // instance and class-validator find nothing to refuse, every time
    if (metadata.type === 'query' && isDto && isEmptyObject(value) && this.emptyQueryIsValid(metadata.metatype as new () => object)) {
      return new (metadata.metatype as new () => object)();
    }
    if (metadata.type === 'body' || metadata.type === 'query') {
      const fields = unstorableTextPaths(value);
      if (Object.keys(fields).length > 0) throw ApiError.validation(fields);
    }
    if (metadata.type === 'query') return this.queryPipe.transform(value, metadata);
    // the base pipe deletes `__proto__`, `prototype` and `constructor` keys in place before building
    // the DTO: what was sent is kept aside (only when such a key is there) to be judged after
    const sent = metadata.type === 'body' && isDto && hasKeyTheBuilderDrops(value) ? structuredClone(value) : undefined;
    const built = (await super.transform(value, metadata)) as unknown;
    if (sent !== undefined && isDtoInstance(built)) {
      const fields = keepJsonAsSent(sent, built as object);
      if (Object.keys(fields).length > 0) throw ApiError.validation(fields);
    }
    return built;
  }
}
