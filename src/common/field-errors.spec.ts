import { ApiError } from './api-error';
import { addFieldError, countUnnamedField, FIELD_ERROR_BOUNDS, fieldCount, hasFieldErrors, mergeFieldErrors } from './field-errors';

describe('field errors', () => {
  it('keeps every problem of a field, in order', () => {
    const fields = {};
    addFieldError(fields, 'name', 'is required');
    addFieldError(fields, 'name', 'is too long');
    expect(fields).toEqual({ name: ['is required', 'is too long'] });
  });

  it('takes a key named like a property of Object.prototype as a plain field', () => {
    const fields = {};
    addFieldError(fields, '__proto__', 'should not exist');
    addFieldError(fields, 'constructor', 'should not exist');
    expect(Object.keys(fields)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(fields)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('merges maps without losing problems of a field both name', () => {
    const merged = mergeFieldErrors({ url: ['a'] }, { url: ['b'], method: ['c'] }, {});
    expect(merged).toEqual({ url: ['a', 'b'], method: ['c'] });
    expect(hasFieldErrors(merged)).toBe(true);
    expect(hasFieldErrors({})).toBe(false);
  });

  it(`names at most ${FIELD_ERROR_BOUNDS.fields} fields and counts the others`, () => {
    const fields = {};
    for (let i = 0; i < 1_000; i++) addFieldError(fields, `items[${i}]`, 'is wrong');
    expect(Object.keys(fields)).toHaveLength(FIELD_ERROR_BOUNDS.fields);
    expect(fieldCount(fields)).toBe(1_000);
    expect(JSON.stringify(fields)).not.toContain('items[100]');
    const merged = mergeFieldErrors({ first: ['x'] }, fields);
    expect(Object.keys(merged)).toHaveLength(FIELD_ERROR_BOUNDS.fields);
    expect(fieldCount(merged)).toBe(1_001);
  });

  it('shortens a long path and a long problem, and keeps a few distinct problems per field', () => {
    const fields: Record<string, string[]> = {};
    addFieldError(fields, 'p'.repeat(10_000), 'x'.repeat(10_000));
    const [path] = Object.keys(fields);
    expect(path).toHaveLength(FIELD_ERROR_BOUNDS.path);
    expect(path.endsWith('…')).toBe(true);
    expect(fields[path][0]).toHaveLength(FIELD_ERROR_BOUNDS.problem);
    for (let i = 0; i < 100; i++) addFieldError(fields, 'same', i % 2 === 0 ? 'again' : `problem ${i}`);
    expect(fields.same).toHaveLength(FIELD_ERROR_BOUNDS.problemsPerField);
    expect(fields.same.filter((problem) => problem === 'again')).toHaveLength(1);
  });
});

describe('ApiError.validation: a bounded answer with the total count', () => {
  it('carries details.field_count and names a few fields in the message', () => {
    const fields = {};
    for (let i = 0; i < 250; i++) addFieldError(fields, `f${i}`, 'is wrong');
    countUnnamedField(fields, 50);
    const error = ApiError.validation(fields);
    expect(error.details?.field_count).toBe(300);
    expect(Object.keys(error.details!.fields!)).toHaveLength(FIELD_ERROR_BOUNDS.fields);
    expect(error.message).toBe('Invalid fields: f0 (is wrong), f1 (is wrong), f2 (is wrong), and 297 more');
  });

  it('bounds a map built without addFieldError too', () => {
    const literal = Object.fromEntries(Array.from({ length: 500 }, (_v, i) => [`f${i}`, ['x'.repeat(5_000)]]));
    const error = ApiError.validation(literal, undefined, { limit: 'agents' });
    expect(Object.keys(error.details!)).toEqual(['limit', 'fields', 'field_count']);
    // named until the text budget is spent: the last field named may pass it by one entry
    const named = Object.keys(error.details!.fields!).length;
    expect(named).toBe(Math.ceil(FIELD_ERROR_BOUNDS.text / (2 + FIELD_ERROR_BOUNDS.problem)));
    expect(error.details!.field_count).toBe(500);
    const oneEntry = FIELD_ERROR_BOUNDS.path + FIELD_ERROR_BOUNDS.problemsPerField * FIELD_ERROR_BOUNDS.problem;
    expect(JSON.stringify(error.details).length).toBeLessThan(FIELD_ERROR_BOUNDS.text + oneEntry + 10 * named + 100);
    expect(error.message.length).toBeLessThanOrEqual(1_000);
  });
});
