import type { FieldErrors } from './api-error';

/**
 * The one way problems are collected by field, in the API (one 422 naming
 * every bad field) and in the fixture loader (which names the first).
 * Field names may come from a client's keys (`config.__proto__`), so a key
 * is always an own property of the map, never one of Object.prototype.
 */
export function addFieldError(fields: FieldErrors, field: string, problem: string): void {
  if (Object.prototype.hasOwnProperty.call(fields, field)) fields[field].push(problem);
  else Object.defineProperty(fields, field, { value: [problem], enumerable: true, writable: true, configurable: true });
}

/** Adds every problem of `more` to `fields` (problems of one field are kept side by side); returns `fields`. */
export function mergeFieldErrors(fields: FieldErrors, ...more: FieldErrors[]): FieldErrors {
  for (const other of more) for (const [field, problems] of Object.entries(other)) for (const problem of problems) addFieldError(fields, field, problem);
  return fields;
}

export function hasFieldErrors(fields: FieldErrors): boolean {
  return Object.keys(fields).length > 0;
}

/**
 * What a resource's rules build from input: the value (with what else the
 * rule hands the service, `Extra`), or every problem by field, which the
 * service answers as one 422 naming them all and the fixture loader as its
 * first problem.
 */
export type Checked<T, Extra = unknown> = ({ ok: true; value: T } & Extra) | { ok: false; fields: FieldErrors };
