import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ValidateIf } from 'class-validator';
import { ApiError, type FieldErrors } from './api-error';

/**
 * A DTO field that may be left out but, when present, may not be null
 * (class-validator's `@IsOptional()` lets null through as well).
 */
export const OptionalNonNull = () => ValidateIf((_object: object, value: unknown) => value !== undefined);

/** class-validator's error tree → `{ "tools[0].name": ["must be a string"] }`. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldErrors {
  const fields: FieldErrors = {};
  for (const error of errors) {
    const path = parent === '' ? error.property : /^\d+$/.test(error.property) ? `${parent}[${error.property}]` : `${parent}.${error.property}`;
    if (error.constraints) {
      fields[path] = Object.values(error.constraints);
    }
    if (error.children?.length) Object.assign(fields, flattenValidationErrors(error.children, path));
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

/**
 * Paths of every string (and object key) holding U+0000. JSON allows it, but
 * PostgreSQL text and jsonb cannot store it: unchecked, it reaches the
 * database and fails there as a 500. Keys are shown with the NUL escaped.
 */
export function nulCharacterPaths(value: unknown, path = '', found: string[] = []): string[] {
  if (typeof value === 'string') {
    if (value.includes(NUL)) found.push(path === '' ? 'body' : path);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => nulCharacterPaths(item, `${path}[${i}]`, found));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const shown = key.split(NUL).join('\\u0000');
      const itemPath = path === '' ? shown : `${path}.${shown}`;
      if (key.includes(NUL)) found.push(itemPath);
      else nulCharacterPaths(item, itemPath, found);
    }
  }
  return found;
}

/**
 * A body DTO class may judge a rule before its fields are validated, where
 * the spec makes that rule win whatever else the body holds (POST /sources:
 * `type` = `upload` is a 409 even with other fields invalid). It receives
 * the parsed JSON object and throws an ApiError to refuse it.
 */
export interface BodyPrecheck {
  precheck(body: Record<string, unknown>): void;
}

function precheckOf(metatype: unknown): BodyPrecheck['precheck'] | undefined {
  const precheck = (metatype as Partial<BodyPrecheck> | undefined)?.precheck;
  return typeof precheck === 'function' ? precheck : undefined;
}

/**
 * Global pipe: whitelisted DTOs only (unknown fields → 422, no silent mass
 * assignment), class-validator failures → 422 `validation_failed` naming the
 * fields, a body that is not a JSON object → 422 as well, and so is any
 * string holding U+0000 (before it reaches PostgreSQL).
 */
@Injectable()
export class ApiValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      forbidUnknownValues: true,
      validationError: { target: false, value: false },
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
      const paths = nulCharacterPaths(value);
      if (paths.length > 0) throw ApiError.validation(Object.fromEntries(paths.map((path) => [path, [NUL_PROBLEM]])));
    }
    return super.transform(value, metadata);
  }
}
