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
