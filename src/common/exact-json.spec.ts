import { inexactNumberPaths, inexactNumberProblem, MAX_NUMBER_CHARS, NEGATIVE_ZERO, NOT_EXACT, OUT_OF_RANGE, TOO_LONG, unstorableNumberPaths } from './exact-json';
import { FIELD_ERROR_BOUNDS, fieldCount } from './field-errors';

describe('inexactNumberProblem: a number is kept when the double holds the value written', () => {
  it.each([
    ['0', null],
    ['-1', null],
    ['123456789012345', null],
    ['1.5', null],
    ['1.0', null],
    ['1e2', null],
    ['1E+2', null],
    ['0.1', null],
    ['0.0', null],
    ['1e300', null],
    ['-2.5e-300', null],
    ['9007199254740992', null],
    ['18446744073709552000', null],
    ['5e-324', null],
    ['-0', NEGATIVE_ZERO],
    ['-0.0', NEGATIVE_ZERO],
    ['-0e5', NEGATIVE_ZERO],
    ['1e400', OUT_OF_RANGE],
    ['-1e400', OUT_OF_RANGE],
    ['18446744073709551617', NOT_EXACT],
    ['9007199254740993', NOT_EXACT],
    ['1e-400', NOT_EXACT],
    ['0.10000000000000000001', NOT_EXACT],
    ['1e99999999999999999999', OUT_OF_RANGE],
  ] as const)('%s', (text, problem) => {
    expect(inexactNumberProblem(text)).toBe(problem);
  });
});

describe('inexactNumberProblem: work linear in the text, a bounded length', () => {
  const zeros = (n: number) => '0'.repeat(n);

  it(`takes a number of ${MAX_NUMBER_CHARS} characters and judges it by value`, () => {
    expect(inexactNumberProblem(`1.${zeros(MAX_NUMBER_CHARS - 2)}`)).toBeNull();
    expect(inexactNumberProblem(`1.${zeros(MAX_NUMBER_CHARS - 3)}1`)).toBe(NOT_EXACT);
    expect(inexactNumberProblem(`1${zeros(MAX_NUMBER_CHARS - 5)}e-${MAX_NUMBER_CHARS - 5}`.slice(0, MAX_NUMBER_CHARS))).not.toBe(TOO_LONG);
  });

  it('refuses a longer one before any arithmetic on it: a million-digit exponent, a long run of zeros', () => {
    expect(inexactNumberProblem(`1e-${'9'.repeat(1_000_000)}`)).toBe(TOO_LONG);
    expect(inexactNumberProblem(`1.${zeros(1_000_000)}1`)).toBe(TOO_LONG);
    expect(inexactNumberProblem(`1${zeros(MAX_NUMBER_CHARS)}`)).toBe(TOO_LONG);
  });
});

describe('inexactNumberPaths: the path of each refused number in a JSON text', () => {
  it(`names the first ${FIELD_ERROR_BOUNDS.fields} and counts them all`, () => {
    const found = inexactNumberPaths(`{"list":[${Array(5_000).fill('1e400').join(',')}]}`);
    expect(Object.keys(found)).toHaveLength(FIELD_ERROR_BOUNDS.fields);
    expect(Object.keys(found)[0]).toBe('list[0]');
    expect(fieldCount(found)).toBe(5_000);
  });

  it('shortens a long key in the path it names', () => {
    const key = 'k'.repeat(100_000);
    expect(Object.keys(inexactNumberPaths(`{"${key}":1e400}`))).toEqual([`${'k'.repeat(FIELD_ERROR_BOUNDS.key - 1)}…`]);
  });

  it('names nothing when every number can be kept, and ignores digits inside strings', () => {
    expect(inexactNumberPaths('{"a":[1,2.5,{"b":"1e400 -0"}],"c":true,"d":null}')).toEqual({});
  });

  it('names objects keys, array indexes, escaped keys and the root', () => {
    const text = '{"a":{"1":[0,{"b":18446744073709551617}],"0":1},"q\\"k":-0,"list":[true,1e400],"x y":{"z":[[1e-400]]}}';
    expect(Object.keys(inexactNumberPaths(text)).sort()).toEqual(['a.1[1].b', 'list[1]', 'q"k', 'x y.z[0][0]']);
    expect(inexactNumberPaths('[1e400]')).toEqual({ '[0]': [OUT_OF_RANGE] });
    expect(inexactNumberPaths('{"a":[1e400]}', '(root)')).toEqual({ 'a[0]': [OUT_OF_RANGE] });
  });
});

describe('unstorableNumberPaths: parsed values that no JSON text could carry', () => {
  it('names -0 and non-finite numbers', () => {
    expect(unstorableNumberPaths({ a: [0, -0], b: { c: Infinity, d: NaN }, e: 1 })).toEqual({ 'a[1]': [NEGATIVE_ZERO], 'b.c': [OUT_OF_RANGE], 'b.d': [OUT_OF_RANGE] });
  });
});
