import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage, ValidateBy, ValidateIf, type ValidationOptions, type ValidatorOptions } from 'class-validator';
import { ApiError, type FieldErrors } from './api-error';
import { MAX_NUMBER_CHARS } from './exact-json';
import { addFieldError, countUnnamedField, FIELD_ERROR_BOUNDS, hasFieldErrors, mergeFieldErrors, namesMoreFields, shownKey } from './field-errors';
import { BOUNDED_JSON, BOUNDS, jsonBoundsProblem } from './input-bounds';

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

/** Fields with a problem in one of class-validator's errors and its children. */
function countErrors(error: ValidationError): number {
  let count = error.constraints ? 1 : 0;
  for (const child of error.children ?? []) count += countErrors(child);
  return count;
}

/** class-validator's error tree → `{ "tools[0].name": ["must be a string"] }`, named up to `FIELD_ERROR_BOUNDS`. */
export function flattenValidationErrors(errors: ValidationError[], parent = '', holder?: unknown): FieldErrors {
  const fields: FieldErrors = {};
  const unnamed = unnamedKeysMessage(holder);
  for (const error of errors) {
    // past the named fields, an error is counted and its path never built
    if (!namesMoreFields(fields)) {
      countUnnamedField(fields, countErrors(error));
      continue;
    }
    const property = printableKey(error.property);
    const path = parent === '' ? property : /^\d+$/.test(property) ? `${parent}[${property}]` : `${parent}.${property}`;
    if (unnamed !== undefined && error.constraints && 'whitelistValidation' in error.constraints) {
      // once however many unknown keys there are
      if (!Object.prototype.hasOwnProperty.call(fields, parent)) addFieldError(fields, parent, unnamed);
      continue;
    }
    if (error.constraints) {
      // the whitelist's message holds the key as sent, which may be long: said again with the key shortened
      const problems = 'whitelistValidation' in error.constraints ? [`property ${property} should not exist`] : problemsOf(error.constraints);
      // a missing field whose rules have no kind rule (only lengths, patterns…): say it is missing
      const said = error.value === undefined && !KIND_CONSTRAINTS.some((name) => name in error.constraints!) ? [`${property} is required`] : problems;
      for (const problem of said) addFieldError(fields, path, problem);
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

/**
 * The most keys one object of a body may have. class-transformer removes
 * duplicate keys from each object it builds by comparing every key with
 * every other: 90,000 keys took half a minute. A DTO has a few dozen fields
 * and free-form objects (hints, configurations, headers) a few hundred keys
 * at most, so a thousand is far from any real body.
 */
export const MAX_OBJECT_KEYS = 1_000;

/**
 * The most objects and arrays one body may hold. Every step after parsing
 * (the prototype-key strip, class-transformer, the text and key walks) pays
 * several microseconds per object, ten times what it pays per string: a
 * megabyte of `{}` is 330,000 of them and blocked the event loop for
 * seconds. The largest real bodies (an agent with 128 tools and 100 data
 * sources, a custom tool with 50 parameters) hold a few hundred.
 */
export const MAX_BODY_CONTAINERS = 10_000;

/** The bounds on a body's shape and on error answers, in words, for the API description. */
export const HOSTILE_INPUT_RULES =
  `A body may hold at most ${MAX_BODY_CONTAINERS} objects and arrays in all and ${MAX_OBJECT_KEYS} keys per object, and a number written with at most ${MAX_NUMBER_CHARS} characters (422 naming the field). ` +
  `A 422 \`validation_failed\` names at most ${FIELD_ERROR_BOUNDS.fields} fields in \`error.details.fields\` (fewer when their paths and problems pass ${FIELD_ERROR_BOUNDS.text} characters; ` +
  `paths are cut at ${FIELD_ERROR_BOUNDS.path} characters, keys inside them at ${FIELD_ERROR_BOUNDS.key}) and gives how many fields had a problem in \`error.details.field_count\`.`;

interface ShapeNode {
  node: object;
  level: number;
  parent: ShapeNode | null;
  key: string | number;
}

/** The path of a node of the walk below, built only for the answer. */
function shapePath(entry: ShapeNode): string {
  const keys: Array<string | number> = [];
  for (let at: ShapeNode | null = entry; at?.parent; at = at.parent) keys.push(at.key);
  let path = '';
  for (const key of keys.reverse()) path = typeof key === 'number' ? `${path}[${key}]` : path === '' ? printableKey(key) : `${path}.${printableKey(key)}`;
  return path || 'body';
}

/**
 * What no body may be, whatever route reads it, judged in one walk before
 * any step whose cost grows faster than the body (the exact-number trace,
 * class-transformer): nested deeper than `MAX_BODY_DEPTH`, an object with
 * more than `MAX_OBJECT_KEYS` keys, or more than `MAX_BODY_CONTAINERS`
 * objects and arrays in all. Null when the shape is fine.
 */
export function bodyShapeProblems(value: unknown): FieldErrors | null {
  if (value === null || typeof value !== 'object') return null;
  const stack: ShapeNode[] = [{ node: value, level: 1, parent: null, key: '' }];
  let containers = 1;
  const push = (entry: ShapeNode, key: string | number, child: unknown) => {
    if (child === null || typeof child !== 'object') return;
    containers++;
    stack.push({ node: child, level: entry.level + 1, parent: entry, key });
  };
  while (stack.length > 0) {
    if (containers > MAX_BODY_CONTAINERS) return { body: [`holds more than ${MAX_BODY_CONTAINERS} objects and arrays`] };
    const entry = stack.pop()!;
    if (entry.level > MAX_BODY_DEPTH) return { body: [`nests deeper than ${MAX_BODY_DEPTH} levels`] };
    if (Array.isArray(entry.node)) {
      entry.node.forEach((child, index) => push(entry, index, child));
      continue;
    }
    const keys = Object.keys(entry.node);
    if (keys.length > MAX_OBJECT_KEYS) return { [shapePath(entry)]: [`has more than ${MAX_OBJECT_KEYS} keys`] };
    for (const key of keys) push(entry, key, (entry.node as Record<string, unknown>)[key]);
  }
  return null;
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

/** A key as a path segment: shortened, NUL and unpaired surrogates escaped, so the message stays printable. */
function printableKey(key: string): string {
  return shownKey(key)
    .split(NUL)
    .join('\\u0000')
    .replace(UNPAIRED_SURROGATES, (unit) => `\\u${unit.charCodeAt(0).toString(16)}`);
}

/** Names the field while the answer names more, else counts it: its path is built only when named. */
function addOrCount(found: FieldErrors, path: () => string, problem: string): void {
  if (namesMoreFields(found)) addFieldError(found, path(), problem);
  else countUnnamedField(found);
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
    if (problem) addOrCount(found, () => (path === '' ? 'body' : path), problem);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => unstorableTextPaths(item, `${path}[${i}]`, found));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const itemPath = () => (path === '' ? printableKey(key) : `${path}.${printableKey(key)}`);
      const problem = textProblem(key) ?? (typeof item === 'string' ? textProblem(item) : null);
      if (problem) addOrCount(found, itemPath, problem);
      else if (item !== null && typeof item === 'object') unstorableTextPaths(item, itemPath(), found);
    }
  }
  return found;
}

// ---------- JSON taken exactly: every key name ----------

const PROTO_KEY_PROBLEM = 'must not be used as a key: JavaScript reads __proto__ as the prototype of an object, not as a field';

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
/** A DTO instance (class-transformer built it from a class), as opposed to its plain copy of free-form JSON. */
const isDtoInstance = (value: unknown): boolean => isRecord(value) && value.constructor !== Object;
const keyPath = (path: string, key: string) => (path === '' ? printableKey(key) : `${path}.${printableKey(key)}`);

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
      if (key === '__proto__') addOrCount(found, () => keyPath(path, key), PROTO_KEY_PROBLEM);
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
    if (!Object.prototype.hasOwnProperty.call(instance, key)) {
      if (unnamed === undefined) addOrCount(found, () => keyPath(path, key), `property ${printableKey(key)} should not exist`);
      else if (!Object.prototype.hasOwnProperty.call(found, path)) addOrCount(found, () => path, unnamed);
    }
    else keepFieldAsSent(raw[key], instance, key, keyPath(path, key), found);
  }
  return found;
}

interface FieldBounds {
  /** `@ArrayMaxSize` */
  arrays: Array<{ property: string; max: number }>;
  /** `@IsBoundedJson` */
  boundedJson: string[];
}

/** Each DTO class's bounds that need no built DTO, read once from class-validator's metadata. */
const fieldBounds = new WeakMap<object, FieldBounds>();

function fieldBoundsOf(target: object): FieldBounds {
  let bounds = fieldBounds.get(target);
  if (!bounds) {
    const metadatas = getMetadataStorage().getTargetValidationMetadatas(target as new () => object, '', true, false);
    bounds = {
      arrays: metadatas
        .filter((metadata) => metadata.name === 'arrayMaxSize')
        .map((metadata) => ({ property: metadata.propertyName, max: Number((metadata.constraints as unknown[])[0]) })),
      boundedJson: metadatas.filter((metadata) => metadata.name === BOUNDED_JSON).map((metadata) => metadata.propertyName),
    };
    fieldBounds.set(target, bounds);
  }
  return bounds;
}

/**
 * The fields of a body class whose bound can be judged on the JSON as sent,
 * before class-transformer copies every value of it: arrays over their
 * `@ArrayMaxSize`, free-form JSON over its `@IsBoundedJson` size. A megabyte
 * of `{}` in `tools` or in `pending_trigger_hint` is refused in one look at
 * the field instead of after a third of a million copies.
 */
function rawFieldBoundProblems(body: Record<string, unknown>, target: object): FieldErrors {
  const found: FieldErrors = {};
  const bounds = fieldBoundsOf(target);
  for (const { property, max } of bounds.arrays) {
    const value = body[property];
    if (Array.isArray(value) && value.length > max) addFieldError(found, property, `${property} must contain no more than ${max} elements`);
  }
  for (const property of bounds.boundedJson) {
    const problem = jsonBoundsProblem(body[property]);
    if (problem) addFieldError(found, property, `${property} ${problem}`);
  }
  return found;
}

/**
 * Every array of a built DTO longer than its `@ArrayMaxSize`, by path, with
 * class-validator's own words. Judged before class-validator runs, which
 * validates each item of an array before its length: a megabyte of `{}` in
 * `tools` was 250,000 nested validations and as many errors, for an answer
 * that says "at most 128" (docs/decisions.md, "Hostile input: bounded work
 * and answers"). Items are walked only within their array's bound.
 */
function oversizedArrayPaths(built: object, path = '', found: FieldErrors = {}): FieldErrors {
  const instance = built as Record<string, unknown>;
  const over = new Set<string>();
  for (const { property, max } of fieldBoundsOf(built.constructor).arrays) {
    const value = instance[property];
    if (Array.isArray(value) && value.length > max) {
      over.add(property);
      addFieldError(found, keyPath(path, property), `${property} must contain no more than ${max} elements`);
    }
  }
  for (const key of Object.keys(instance)) {
    const value = instance[key];
    if (over.has(key)) continue;
    if (isDtoInstance(value)) oversizedArrayPaths(value as object, keyPath(path, key), found);
    else if (Array.isArray(value)) value.forEach((item, i) => isDtoInstance(item) && oversizedArrayPaths(item as object, `${keyPath(path, key)}[${i}]`, found));
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

  /** Called by the base pipe with the DTO it built, before class-validator: arrays over their bound are refused first. */
  protected override validate(object: object, validatorOptions?: ValidatorOptions): Promise<ValidationError[]> | ValidationError[] {
    const oversized = oversizedArrayPaths(object);
    if (hasFieldErrors(oversized)) throw ApiError.validation(oversized);
    return super.validate(object, validatorOptions);
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const isDto = typeof metadata.metatype === 'function' && ![String, Number, Boolean, Array, Object].includes(metadata.metatype as never);
    // class-transformer recurses once per level (10,000 levels overflow the stack, a 500) and compares
    // every key of an object with every other; the body reader judged this already, other callers not
    const shape = metadata.type === 'body' && !Buffer.isBuffer(value) ? bodyShapeProblems(value) : null;
    if (shape) throw ApiError.validation(shape);
    if (metadata.type === 'body' && isDto) {
      if (value === undefined) value = {};
      // a Buffer is a body of another Content-Type, read only for the idempotency fingerprint
      if (typeof value !== 'object' || value === null || Array.isArray(value) || Buffer.isBuffer(value)) {
        throw ApiError.validation({ body: ['must be a JSON object'] });
      }
      precheckOf(metadata.metatype)?.(value as Record<string, unknown>);
      const overBound = rawFieldBoundProblems(value as Record<string, unknown>, metadata.metatype!);
      if (hasFieldErrors(overBound)) throw ApiError.validation(overBound);
    }
    if (metadata.type === 'query' && isDto && (value === undefined || value === null)) value = {};
    // no query at all (most list requests): class-transformer would build a bare
    // instance and class-validator find nothing to refuse, every time
    if (metadata.type === 'query' && isDto && isEmptyObject(value) && this.emptyQueryIsValid(metadata.metatype as new () => object)) {
      return new (metadata.metatype as new () => object)();
    }
    if (metadata.type === 'body' || metadata.type === 'query') {
      const fields = unstorableTextPaths(value);
      if (hasFieldErrors(fields)) throw ApiError.validation(fields);
    }
    if (metadata.type === 'query') return this.queryPipe.transform(value, metadata);
    // the base pipe deletes `__proto__`, `prototype` and `constructor` keys in place before building
    // the DTO: what was sent is kept aside (only when such a key is there) to be judged after
    const sent = metadata.type === 'body' && isDto && hasKeyTheBuilderDrops(value) ? structuredClone(value) : undefined;
    const built = (await super.transform(value, metadata)) as unknown;
    if (sent !== undefined && isDtoInstance(built)) {
      const fields = keepJsonAsSent(sent, built as object);
      if (hasFieldErrors(fields)) throw ApiError.validation(fields);
    }
    return built;
  }
}
