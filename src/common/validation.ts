import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiError, type FieldErrors } from './api-error';

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

/**
 * Global pipe: whitelisted DTOs only (unknown fields → 422, no silent mass
 * assignment), class-validator failures → 422 `validation_failed` naming the
 * fields, and a body that is not a JSON object → 422 as well.
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

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const isDto = typeof metadata.metatype === 'function' && ![String, Number, Boolean, Array, Object].includes(metadata.metatype as never);
    // class-transformer recurses once per level: 10,000 levels overflow the stack (a 500)
    if (metadata.type === 'body' && nestingDepth(value, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      throw ApiError.validation({ body: [`nests deeper than ${MAX_BODY_DEPTH} levels`] });
    }
    if (metadata.type === 'body' && isDto) {
      if (value === undefined) value = {};
      if (typeof value !== 'object' || Array.isArray(value)) {
        throw ApiError.validation({ body: ['must be a JSON object'] });
      }
    }
    if (metadata.type === 'query' && isDto && (value === undefined || value === null)) value = {};
    return super.transform(value, metadata);
  }
}
