import type { OpenAPIObject } from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_METHODS, IDEMPOTENT_REPLAYED_HEADER } from './idempotency.service';

type Operation = {
  parameters?: Array<Record<string, unknown>>;
  responses?: Record<string, { headers?: Record<string, unknown>; description?: string; content?: unknown }>;
  security?: unknown[];
};

const KEY_PARAMETER = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: 'header',
  required: false,
  description:
    'Makes the request safe to retry: the same key with the same method, path and body within 24 hours returns the stored ' +
    'response (with this request\'s `meta.request_id` and `Idempotent-Replayed: true`) without running the operation again; ' +
    'with a different method, path or body it returns 409 `idempotency_key_reused`. Keys are scoped per organization.',
  schema: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[\\x20-\\x7E]+$' },
};

const REPLAYED_HEADER = {
  description: '`true` when this is the stored response of an earlier request with the same `Idempotency-Key`.',
  schema: { type: 'string', enum: ['true'] },
};

/** statuses a replay can answer with: the stored 2xx and the operation's own 4xx */
const REPLAYABLE = (status: string) => /^2\d\d$/.test(status) || status === '404' || status === '409' || status === '422';

/**
 * Documents idempotency on every authenticated POST and PATCH of the
 * generated document, so an endpoint gets it without a decorator: the
 * header parameter, `Idempotent-Replayed` on the responses a replay can
 * give, and 409 / 422 for a reused or malformed key.
 */
export function documentIdempotency(document: OpenAPIObject): void {
  for (const pathItem of Object.values(document.paths)) {
    for (const [method, value] of Object.entries(pathItem)) {
      if (!IDEMPOTENT_METHODS.has(method.toUpperCase()) || !value || typeof value !== 'object') continue;
      const operation = value as Operation;
      if (Array.isArray(operation.security) && operation.security.length === 0) continue; // public: no organization
      operation.parameters = [...(operation.parameters ?? []).filter((p) => p.name !== IDEMPOTENCY_KEY_HEADER), KEY_PARAMETER];
      const responses = (operation.responses ??= {});
      responses['409'] ??= { description: 'Conflict.', content: errorContent() };
      responses['409'].description = `${responses['409'].description ?? ''} \`idempotency_key_reused\`: the Idempotency-Key was used with a different request.`.trim();
      responses['422'] ??= { description: 'Validation failed (`validation_failed`), a malformed Idempotency-Key included.', content: errorContent() };
      for (const [status, response] of Object.entries(responses)) {
        if (REPLAYABLE(status)) response.headers = { ...(response.headers ?? {}), [IDEMPOTENT_REPLAYED_HEADER]: REPLAYED_HEADER };
      }
    }
  }
}

function errorContent() {
  return { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } };
}
