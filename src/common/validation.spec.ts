import type { ArgumentMetadata } from '@nestjs/common';
import { IsOptional, IsString } from 'class-validator';
import { ApiError, ErrorCode } from './api-error';
import { FIELD_ERROR_BOUNDS } from './field-errors';
import {
  ApiValidationPipe,
  bodyShapeProblems,
  BodyPrecheck,
  HEX_COLOR_PATTERN,
  isRfc3339DateTime,
  MAX_BODY_CONTAINERS,
  MAX_BODY_DEPTH,
  MAX_OBJECT_KEYS,
  unstorableTextPaths,
} from './validation';

class NoteCreate {
  @IsOptional()
  @IsString()
  name?: string;
}

const body: ArgumentMetadata = { type: 'body', metatype: NoteCreate };

function nested(depth: number, shape: 'object' | 'array'): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = shape === 'object' ? { a: value } : [value];
  return value;
}

describe('ApiValidationPipe: deeply nested bodies', () => {
  const pipe = new ApiValidationPipe();

  it.each(['object', 'array'] as const)('rejects %ss nested 10,000 levels deep with 422 validation_failed, not a stack overflow', async (shape) => {
    const error = await pipe.transform({ name: 'x', extra: nested(10_000, shape) }, body).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(422);
    expect((error as ApiError).details?.fields).toEqual({ body: [`nests deeper than ${MAX_BODY_DEPTH} levels`] });
  });

  it('still validates an ordinary body', async () => {
    await expect(pipe.transform({ name: 'ok' }, body)).resolves.toBeInstanceOf(NoteCreate);
  });

});

describe('bodyShapeProblems: what no body may be, judged in one walk', () => {
  it('takes a body at every bound', () => {
    expect(bodyShapeProblems(nested(MAX_BODY_DEPTH, 'array'))).toBeNull();
    expect(bodyShapeProblems({ hint: Object.fromEntries(Array.from({ length: MAX_OBJECT_KEYS }, (_v, i) => [`k${i}`, i])) })).toBeNull();
    expect(bodyShapeProblems({ items: Array.from({ length: MAX_BODY_CONTAINERS - 2 }, () => ({})) })).toBeNull();
    expect(bodyShapeProblems('text')).toBeNull();
  });

  it('counts depth without recursion, a million levels included', () => {
    expect(bodyShapeProblems(nested(MAX_BODY_DEPTH + 1, 'array'))).toEqual({ body: [`nests deeper than ${MAX_BODY_DEPTH} levels`] });
    expect(bodyShapeProblems(nested(1_000_000, 'object'))).toEqual({ body: [`nests deeper than ${MAX_BODY_DEPTH} levels`] });
  });

  it('names the object with one key too many, its path shortened', () => {
    const many = Object.fromEntries(Array.from({ length: MAX_OBJECT_KEYS + 1 }, (_v, i) => [`k${i}`, i]));
    expect(bodyShapeProblems({ a: [{ hint: many }] })).toEqual({ 'a[0].hint': [`has more than ${MAX_OBJECT_KEYS} keys`] });
    expect(bodyShapeProblems(many)).toEqual({ body: [`has more than ${MAX_OBJECT_KEYS} keys`] });
    const long = 'k'.repeat(10_000);
    expect(Object.keys(bodyShapeProblems({ [long]: many })!)[0]).toBe(`${'k'.repeat(FIELD_ERROR_BOUNDS.key - 1)}…`);
  });

  it('refuses one object or array too many', () => {
    expect(bodyShapeProblems({ items: Array.from({ length: MAX_BODY_CONTAINERS }, () => []) })).toEqual({ body: [`holds more than ${MAX_BODY_CONTAINERS} objects and arrays`] });
  });
});

describe('unstorableTextPaths', () => {
  const NUL = 'must not contain the NUL character (U+0000)';
  const UNPAIRED = expect.stringMatching(/^must be valid UTF-8 text/);

  it('finds U+0000 in nested strings, array items and keys, naming each path once', () => {
    const body = {
      name: 'ok',
      tools: [{ name: 'a\u0000b' }, { name: 'fine' }],
      config: { url: 'https://x\u0000', 'k\u0000ey': { deep: '\u0000' } },
      n: 1,
      nothing: null,
    };
    expect(unstorableTextPaths(body)).toEqual({ 'tools[0].name': [NUL], 'config.url': [NUL], 'config.k\\u0000ey': [NUL] });
  });

  it('finds unpaired surrogates (high, low, reversed) in values and keys; a real pair is fine', () => {
    const body = { a: 'x\ud800', b: ['\udc00y'], c: '\udc00\ud800', ok: 'emoji \ud83d\ude00', ['k\udfffey']: 'v' };
    expect(unstorableTextPaths(body)).toEqual({ a: [UNPAIRED], 'b[0]': [UNPAIRED], c: [UNPAIRED], 'k\\udfffey': [UNPAIRED] });
  });

  it('a top-level string is "body"; clean values give nothing', () => {
    expect(unstorableTextPaths('\u0000')).toEqual({ body: [NUL] });
    expect(unstorableTextPaths({ a: ['x', { b: 'y' }], c: true })).toEqual({});
  });
});

describe('isRfc3339DateTime: the one date-time rule of bodies and fixtures', () => {
  it.each(['2026-01-01T00:00:00Z', '2026-01-01t00:00:00z', '2026-01-01T00:00:00.123456789Z', '2026-01-01T02:00:00+02:00', '2024-02-29T23:59:59-05:30'])('accepts %s', (value) => {
    expect(isRfc3339DateTime(value)).toBe(true);
  });

  it.each([
    '2026-01-01',
    '2026-01-01T00:00:00',
    '2026-01-01T00:00Z',
    '2026-01-01 00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-12-31T23:59:60Z',
    '2026-01-01T00:00:00+24:00',
    `2026-01-01T00:00:00.${'1'.repeat(60)}Z`,
    'yesterday',
    20260101,
  ])('refuses %p', (value) => {
    expect(isRfc3339DateTime(value)).toBe(false);
  });
});

describe('HEX_COLOR_PATTERN: every CSS hex color form', () => {
  it('takes #rgb, #rgba, #rrggbb, #rrggbbaa and nothing else', () => {
    expect(['#abc', '#ABCD', '#a1b2c3', '#a1b2c3d4'].every((color) => HEX_COLOR_PATTERN.test(color))).toBe(true);
    expect(['abc', '#ab', '#abcde', '#abcdefg', '#a1b2c3d4e', '#ggg', 'red'].some((color) => HEX_COLOR_PATTERN.test(color))).toBe(false);
  });
});

class ListQuery {
  @IsOptional()
  @IsString()
  cursor?: string;
}

class UndecoratedDefault {
  @IsOptional()
  @IsString()
  cursor?: string;

  // not a validated field: the whitelist strips it from what the pipe answers
  limit = 25;
}

class NeedsAQuery {
  @IsString()
  q!: string;
}

describe('ApiValidationPipe: a request without a query', () => {
  const pipe = new ApiValidationPipe();
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('answers a fresh instance with its defaults once {} is known to pass, and still validates a real query', async () => {
    const query: ArgumentMetadata = { type: 'query', metatype: ListQuery };
    const first = await pipe.transform({}, query);
    await settle();
    const second = await pipe.transform({}, query);
    const third = await pipe.transform(undefined, query);
    for (const value of [first, second, third]) expect(value).toEqual(new ListQuery());
    expect(second).toBeInstanceOf(ListQuery);
    expect(second).not.toBe(third);
    const refused = await pipe.transform({ cursor: ['a', 'b'] }, query).catch((e: unknown) => e);
    expect((refused as ApiError).status).toBe(422);
  });

  it('answers exactly what the full validation answers, also where a bare instance would differ', async () => {
    const query: ArgumentMetadata = { type: 'query', metatype: UndecoratedDefault };
    for (let i = 0; i < 3; i++) {
      const value = await pipe.transform({}, query);
      expect(value).toBeInstanceOf(UndecoratedDefault);
      expect(Object.keys(value as object)).toEqual([]);
      await settle();
    }
  });

  it('keeps refusing an empty query when the DTO requires a field', async () => {
    const query: ArgumentMetadata = { type: 'query', metatype: NeedsAQuery };
    for (let i = 0; i < 3; i++) {
      const error = await pipe.transform({}, query).catch((e: unknown) => e);
      expect((error as ApiError).status).toBe(422);
      await settle();
    }
  });
});

describe('ApiValidationPipe: @BodyPrecheck', () => {
  const pipe = new ApiValidationPipe();
  const refuseLocked = (value: Record<string, unknown>) => {
    if (value.locked === true) throw new ApiError(ErrorCode.Conflict, 'locked');
  };

  @BodyPrecheck(refuseLocked)
  class Guarded {
    @IsString()
    name!: string;
  }

  /** a static method of the same name is no registration: only the decorator is */
  class Undecorated {
    static precheck = refuseLocked;
    @IsString()
    name!: string;
  }

  it('runs the registered precheck before the fields are validated: its answer wins over an invalid field', async () => {
    const error = await pipe.transform({ locked: true, name: 42 }, { type: 'body', metatype: Guarded }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(409);
  });

  it('a class without the decorator gets plain validation, whatever static methods it has', async () => {
    const error = await pipe.transform({ locked: true, name: 42 }, { type: 'body', metatype: Undecorated }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(422);
  });
});
