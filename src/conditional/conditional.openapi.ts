import type { OpenAPIObject } from '@nestjs/swagger';
import { ETAG_HEADER } from './entity-tag.interceptor';

/** no header can be longer than the 16 KiB all of them share (431 `headers_too_large`) */
const CONDITION_SCHEMA = { type: 'string', maxLength: 16384 };

type Operation = {
  parameters?: Array<Record<string, unknown>>;
  responses?: Record<string, { headers?: Record<string, unknown>; description?: string; content?: unknown }>;
  security?: unknown[];
};

const IF_NONE_MATCH = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description:
    'An `ETag` of this resource read earlier (or a comma-separated list of them, or `*`): when one is still current (weak comparison), ' +
    'the answer is 304 with no body. A 304 counts against the rate limit like any other request.',
  schema: CONDITION_SCHEMA,
};

const IF_MATCH = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description:
    'Change the resource only if it is still as read: the `ETag` of the last read (or a comma-separated list of tags, or `*` for any current version). ' +
    'When none is the current tag (strong comparison; a weak `W/` tag never is, nor a value that is not a list of entity tags), the answer is ' +
    '412 `precondition_failed` and nothing changes. The check and the write are atomic: of two writes sent with the same tag, one passes. ' +
    'Not part of the `Idempotency-Key` fingerprint (method, path and body only): a retry with the key of a write that committed gets the stored answer; ' +
    'a 412 is not stored, so after re-reading the same key can be sent again with the new tag.',
  schema: CONDITION_SCHEMA,
};

const NOT_MODIFIED = {
  description: 'Not Modified: `If-None-Match` names the current `ETag`. No body; `ETag` and `X-Request-ID` are sent.',
  headers: {
    [ETAG_HEADER]: { description: 'The current entity tag.', schema: { type: 'string' } },
    'X-Request-ID': { description: 'The request id.', schema: { type: 'string' } },
  },
};

const PRECONDITION_FAILED = {
  description: 'Precondition failed (`precondition_failed`): `If-Match` names none of the current entity tags of the resource; nothing was changed. Read it again and retry.',
  headers: { 'X-Request-ID': { description: 'Equals `request_id` in the body.', schema: { type: 'string' } } },
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
};

/**
 * Conditional requests on the operations that have them: `If-None-Match`
 * and 304 on every GET whose answer carries an `ETag` (declared by
 * `ApiEnvelope`), `If-Match` and 412 on every authenticated PATCH and
 * DELETE (each such route's controller declares `@ConditionalWrites`).
 */
export function documentConditionalRequests(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const [method, value] of Object.entries(pathItem)) {
      if (!value || typeof value !== 'object') continue;
      const operation = value as Operation;
      const responses = (operation.responses ??= {});
      // copies: later steps add headers to each operation's responses in place
      if (method === 'get' && responses['200']?.headers?.[ETAG_HEADER]) {
        operation.parameters = [...(operation.parameters ?? []), structuredClone(IF_NONE_MATCH)];
        responses['304'] = structuredClone(NOT_MODIFIED);
      }
      const isPublic = Array.isArray(operation.security) && operation.security.length === 0;
      if ((method === 'patch' || method === 'delete') && !isPublic) {
        operation.parameters = [...(operation.parameters ?? []), structuredClone(IF_MATCH)];
        responses['412'] = structuredClone(PRECONDITION_FAILED);
      }
    }
  }
}
