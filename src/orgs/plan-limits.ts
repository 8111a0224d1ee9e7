import { ApiError, type FieldErrors } from '../common/api-error';
import { addFieldError, mergeFieldErrors } from '../common/field-errors';
import type { OrgLimits } from '../database/orgs.table';

type PlanCap = keyof OrgLimits;

/** The plan-cap answer in words, for the OpenAPI description of every operation that checks a cap. */
export function planCapDescription(cap: PlanCap, note?: string): string {
  return `Plan cap \`limits.${cap}\`${note ? ` (${note})` : ''}: over it, 422 \`validation_failed\` with \`details.limit\` = \`"${cap}"\`, \`details.max\` (the cap) and \`details.fields["limits.${cap}"]\`.`;
}

/**
 * The one answer to a request that would go past a plan cap, on every
 * endpoint that checks one: 422 `validation_failed` with
 * `details.limit` (the cap's name, what a client branches on),
 * `details.max` (the cap's value) and `details.fields["limits.<cap>"]`;
 * `atFault` adds the request fields the client would have to change
 * (a PATCH's `tools`). docs/decisions.md ("Plan caps").
 */
export function planLimitReached(cap: PlanCap, max: number, problem: string, atFault: FieldErrors = {}): ApiError {
  const fields: FieldErrors = {};
  addFieldError(fields, `limits.${cap}`, problem);
  mergeFieldErrors(fields, atFault);
  return ApiError.validation(fields, `Plan limit reached: limits.${cap} allows ${max}; ${problem}.`, { limit: cap, max });
}

/**
 * A cap on how many rows an organization has: one more is asked for, and
 * `countUsed` says how many exist. null is unlimited, and then nothing is
 * counted (a count on every create cost a query for the plans without a cap).
 * A guard of the services, not a rule: it reads the database (through
 * `countUsed`), so it runs inside the service's transaction and throws.
 */
export async function checkCountCap(cap: PlanCap, max: number | null | undefined, countUsed: () => Promise<number>, counted: string): Promise<void> {
  if (max === null || max === undefined) return;
  const used = await countUsed();
  if (used >= max) throw planLimitReached(cap, max, `the organization has ${used} ${counted}`);
}
