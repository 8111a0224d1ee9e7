import { SetMetadata, type Type } from '@nestjs/common';

/** The source of the current representation for `If-Match` on a controller's PATCH and DELETE. */
export const CURRENT_REPRESENTATION = 'conditional:current-representation';

/**
 * What a resource's service offers so that its PATCH and DELETE honour
 * `If-Match`: the resource exactly as `GET` answers it in `data`, locked
 * until the open transaction ends (`SELECT … FOR UPDATE`), so no other
 * write can come between the check and the write; null when there is none
 * (the route's own 404 then answers).
 */
export interface LockedRepresentation {
  lockedRepresentation(orgId: string, rawId: string): Promise<object | null>;
}

/**
 * Declares, on a controller whose PATCH and DELETE routes take `:id`, which
 * service gives the current representation their `If-Match` is compared
 * with. test/conditional-requests.e2e-spec.ts fails for a PATCH or DELETE
 * route of a controller without it.
 */
export const ConditionalWrites = (source: Type<LockedRepresentation>) => SetMetadata(CURRENT_REPRESENTATION, source);
