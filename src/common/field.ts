import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsDate, IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { BOUNDS, IsBoundedJson } from './input-bounds';
import { QUERY_DATE_MESSAGE, QUERY_DATE_SCHEMA, toQueryBoolean, toQueryDate, toStrictInt } from './query-values';
import { DATE_TIME_DESCRIPTION, IsDateTime, OptionalNonNull } from './validation';

/**
 * Compound field decorators: a body field's type, bounds, nullability,
 * example and description are written once and feed both the OpenAPI
 * document (@ApiProperty) and request validation (class-validator), so the
 * document cannot state a rule the server does not enforce or the reverse.
 * Fixture classes derive from the request DTOs (`PickType`, `IntersectionType`
 * of @nestjs/swagger), which carries these rules into the fixture loader.
 */
interface Presence {
  /** may be left out (default: required) */
  optional?: boolean;
  /**
   * with `optional`: documented as required all the same, because the
   * service reports the absence itself, beside the body's other problems
   */
  requiredByService?: true;
  /** takes an explicit `null` (only meaningful with `optional`) */
  nullable?: boolean;
  description?: string;
  example?: unknown;
  default?: unknown;
  /** a secret: taken, never returned */
  writeOnly?: true;
}

/**
 * How presence is validated: a nullable optional field skips its rules on
 * null or absence (IsOptional); a non-null optional one only on absence, so
 * an explicit null is refused by the type rule.
 */
function presence(rules: Presence): PropertyDecorator[] {
  if (!rules.optional) return [];
  return [rules.nullable ? IsOptional() : OptionalNonNull()];
}

function documented(rules: Presence, schema: ApiPropertyOptions): PropertyDecorator {
  const { description, example, default: defaultValue, writeOnly } = rules;
  return ApiProperty({
    ...schema,
    required: !rules.optional || rules.requiredByService === true,
    ...(rules.nullable ? { nullable: true } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(example !== undefined ? { example } : {}),
    ...(defaultValue !== undefined ? { default: defaultValue } : {}),
    ...(writeOnly ? { writeOnly } : {}),
  } as ApiPropertyOptions);
}

/**
 * The bound of a text: a length, or an anchored pattern whose matches are
 * bounded themselves (a hex color). A `ruledPattern` is documented only: the
 * resource's rules judge it, with a message that says what is wrong (as
 * `IdField` leaves an id's format to the service).
 */
type TextBound = ({ maxLength: number; pattern?: RegExp } | { maxLength?: undefined; pattern: RegExp }) & { ruledPattern?: string };

/**
 * An id another row must own: its format is documented (`idPattern(kind)`)
 * and judged by the service (`parseId`, a 422 naming the field), together
 * with whether the row exists, so the validator only bounds its length.
 */
export function IdField(rules: Presence & { pattern: string; minLength?: 1 }): PropertyDecorator {
  return applyDecorators(
    documented(rules, { type: 'string', ...(rules.minLength ? { minLength: 1 } : {}), maxLength: BOUNDS.id, pattern: rules.pattern }),
    ...presence(rules),
    IsString(),
    ...(rules.minLength ? [IsNotEmpty()] : []),
    MaxLength(BOUNDS.id),
  );
}

/** A string of at most `maxLength` UTF-16 units; `minLength: 1` refuses the empty string; `pattern` with the message a refusal gives. */
export function TextField(rules: Presence & TextBound & { minLength?: 1; message?: string }): PropertyDecorator {
  const { maxLength, minLength, pattern, ruledPattern } = rules;
  const documentedPattern = pattern?.source ?? ruledPattern;
  return applyDecorators(
    documented(rules, {
      type: 'string',
      ...(maxLength !== undefined ? { maxLength } : {}),
      ...(minLength ? { minLength } : {}),
      ...(documentedPattern !== undefined ? { pattern: documentedPattern } : {}),
    }),
    ...presence(rules),
    IsString(),
    ...(minLength ? [IsNotEmpty()] : []),
    ...(maxLength !== undefined ? [MaxLength(maxLength)] : []),
    ...(pattern ? [Matches(pattern, rules.message ? { message: rules.message } : undefined)] : []),
  );
}

/** An RFC 3339 date-time with a zone (the only form any body takes). */
export function DateTimeField(rules: Presence): PropertyDecorator {
  const description = [rules.description, DATE_TIME_DESCRIPTION].filter(Boolean).join(' ');
  return applyDecorators(documented({ ...rules, description }, { type: 'string', format: 'date-time', maxLength: BOUNDS.dateTime }), ...presence(rules), IsDateTime());
}

/** One of `values`. */
export function EnumField(rules: Presence & { values: readonly string[] }): PropertyDecorator {
  return applyDecorators(documented(rules, { enum: [...rules.values] }), ...presence(rules), IsIn(rules.values));
}

export function BooleanField(rules: Presence): PropertyDecorator {
  return applyDecorators(documented(rules, { type: 'boolean' }), ...presence(rules), IsBoolean());
}

/** A list of ids (see IdField: the pattern is documented, the service parses each one). */
export function IdListField(rules: Presence & { maxItems: number; pattern: string }): PropertyDecorator {
  return applyDecorators(
    documented(rules, { type: 'array', items: { type: 'string', maxLength: BOUNDS.id, pattern: rules.pattern }, maxItems: rules.maxItems }),
    ...presence(rules),
    IsArray(),
    ArrayMaxSize(rules.maxItems),
    IsString({ each: true }),
    MaxLength(BOUNDS.id, { each: true }),
  );
}

/** A list of objects of class `of`, each validated by that class's own rules. */
export function ObjectListField(rules: Presence & { of: new () => object; maxItems: number }): PropertyDecorator {
  return applyDecorators(
    documented(rules, { type: [rules.of], maxItems: rules.maxItems }),
    ...presence(rules),
    IsArray(),
    ArrayMaxSize(rules.maxItems),
    ValidateNested({ each: true }),
    Type(() => rules.of),
  );
}

/** One object of class `of`, validated by that class's own rules. */
export function ObjectField(rules: Presence & { of: new () => object }): PropertyDecorator {
  return applyDecorators(documented(rules, { type: rules.of }), ...presence(rules), IsObject(), ValidateNested(), Type(() => rules.of));
}

/** A free-form JSON object, bounded in size and depth (`BOUNDS.jsonBytes`, `BOUNDS.jsonDepth`). */
export function JsonObjectField(rules: Presence): PropertyDecorator {
  return applyDecorators(documented(rules, { type: 'object', additionalProperties: true }), ...presence(rules), IsObject(), IsBoundedJson());
}

/**
 * Query parameters, written once like body fields. A query value is always
 * optional and arrives as text; a transform reads it (`query-values.ts`), and
 * what does not read becomes a sentinel the validator refuses with the
 * parameter's own message, so the 422 names the parameter.
 */
interface QueryParamRules {
  description?: string;
}

/** A text parameter, never empty (an empty value filters nothing and reads as a client's mistake); `pattern` is documented, the service judges it. */
export function QueryTextParam(rules: QueryParamRules & { maxLength: number; pattern?: string }): PropertyDecorator {
  const { maxLength, pattern, description } = rules;
  return applyDecorators(
    ApiPropertyOptional({
      type: 'string',
      minLength: 1,
      maxLength,
      ...(pattern !== undefined ? { pattern } : {}),
      ...(description !== undefined ? { description } : {}),
    }),
    IsOptional(),
    IsString(),
    IsNotEmpty(),
    MaxLength(maxLength),
  );
}

/** An RFC 3339 date-time parameter (`toQueryDate`: the offset may be left out, then UTC). */
export function QueryDateParam(rules: QueryParamRules): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ ...QUERY_DATE_SCHEMA, ...(rules.description !== undefined ? { description: rules.description } : {}) }),
    IsOptional(),
    Transform(toQueryDate),
    IsDate(QUERY_DATE_MESSAGE),
  );
}

/** `1` and `0` are read as `true` and `false` beside the words (docs/decisions.md); the document types it boolean, so generated clients send a boolean. */
const ALSO_ONE_AND_ZERO = '`1` and `0` are accepted as `true` and `false`; any other value is refused (422).';

export function QueryBooleanParam(rules: QueryParamRules & { description: string }): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ type: 'boolean', description: `${rules.description} ${ALSO_ONE_AND_ZERO}` }),
    IsOptional(),
    Transform(toQueryBoolean),
    IsBoolean({ message: '$property must be true, false, 1 or 0' }),
  );
}

/** A whole number from `minimum` to `maximum` (`toStrictInt`: no fractions, exponents or blanks). */
export function QueryIntParam(rules: QueryParamRules & { minimum: number; maximum: number; default?: number }): PropertyDecorator {
  const { minimum, maximum, description, default: defaultValue } = rules;
  const message = { message: `$property must be an integer from ${minimum} to ${maximum}` };
  return applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      format: 'int32',
      minimum,
      maximum,
      ...(defaultValue !== undefined ? { default: defaultValue } : {}),
      ...(description !== undefined ? { description } : {}),
    }),
    IsOptional(),
    Transform(toStrictInt),
    IsInt(message),
    Min(minimum, message),
    Max(maximum, message),
  );
}
