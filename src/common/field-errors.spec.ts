import { addFieldError, hasFieldErrors, mergeFieldErrors } from './field-errors';

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
});
