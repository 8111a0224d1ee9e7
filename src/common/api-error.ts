import { fieldCount, mergeFieldErrors, type Checked } from './field-errors';
/**
 * Every error the API returns, by code. Clients branch on these strings
 * (clients branch on `code`, never on `message`).
 */
export enum ErrorCode {
  Unauthorized = 'unauthorized',
  InsufficientScope = 'insufficient_scope',
  OrgInactive = 'org_inactive',
  NotFound = 'not_found',
  AgentNotFound = 'agent_not_found',
  AgentHandleTaken = 'agent_handle_taken',
  IdempotencyKeyReused = 'idempotency_key_reused',
  Conflict = 'conflict',
  /** `If-Match` names no current entity tag of the resource: nothing was changed */
  PreconditionFailed = 'precondition_failed',
  ValidationFailed = 'validation_failed',
  /** the client did not send its whole request within HTTP_REQUEST_TIMEOUT_MS (docs/decisions.md) */
  RequestTimeout = 'request_timeout',
  /** not valid HTTP: Node's parser refused it (bare CR, Content-Length with Transfer-Encoding …), or HTTP/1.1 without Host */
  BadRequest = 'bad_request',
  /** the request headers exceed Node's limit (16 KiB) */
  HeadersTooLarge = 'headers_too_large',
  /** an `Expect` header other than `100-continue` */
  ExpectationFailed = 'expectation_failed',
  PayloadTooLarge = 'payload_too_large',
  RateLimited = 'rate_limited',
  InternalError = 'internal_error',
  ServiceUnavailable = 'service_unavailable',
}

/** HTTP status of each code: one exhaustive switch, so a new code cannot ship without one. */
export function statusOf(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.Unauthorized:
      return 401;
    case ErrorCode.InsufficientScope:
    case ErrorCode.OrgInactive:
      return 403;
    case ErrorCode.NotFound:
    case ErrorCode.AgentNotFound:
      return 404;
    case ErrorCode.AgentHandleTaken:
    case ErrorCode.IdempotencyKeyReused:
    case ErrorCode.Conflict:
      return 409;
    case ErrorCode.PreconditionFailed:
      return 412;
    case ErrorCode.BadRequest:
      return 400;
    case ErrorCode.RequestTimeout:
      return 408;
    case ErrorCode.ExpectationFailed:
      return 417;
    case ErrorCode.HeadersTooLarge:
      return 431;
    case ErrorCode.PayloadTooLarge:
      return 413;
    case ErrorCode.ValidationFailed:
      return 422;
    case ErrorCode.RateLimited:
      return 429;
    case ErrorCode.InternalError:
      return 500;
    case ErrorCode.ServiceUnavailable:
      return 503;
  }
}

/** Fields a generated message names; `details.fields` names the rest. */
const MESSAGE_FIELDS = 3;
/** Characters of a generated message: `details.fields` holds the rest. */
const MESSAGE_CHARS = 1_000;

const shortened = (text: string) => (text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS - 1)}…` : text);

/** Field path → problems, for `validation_failed`. */
export type FieldErrors = Record<string, string[]>;

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** extra machine-readable detail rendered under `error.details` */
    readonly details?: { fields?: FieldErrors } & Record<string, unknown>,
    /** response headers that belong to this error (e.g. Retry-After) */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = statusOf(code);
  }

  /**
   * 422 `validation_failed` naming the fields: `details.fields` holds at most
   * `FIELD_ERROR_BOUNDS.fields` of them (the producers stop naming there),
   * `details.field_count` how many there were; the message names the first
   * few. `extra` goes in `details` before them (a plan cap's `limit`, `max`).
   */
  static validation(given: FieldErrors, message?: string, extra: Record<string, unknown> = {}): ApiError {
    // a map built without addFieldError (a literal, class-validator's tree) gets the same bounds
    const fields = mergeFieldErrors({}, given);
    const count = fieldCount(fields);
    const names = Object.keys(fields);
    const shown = names.slice(0, MESSAGE_FIELDS).map((name) => `${name} (${fields[name].join('; ')})`);
    if (count > shown.length) shown.push(`and ${count - shown.length} more`);
    const text = message ?? (names.length === 0 ? 'The request is not valid.' : shortened(`Invalid ${count === 1 ? 'field' : 'fields'}: ${shown.join(', ')}`));
    return new ApiError(ErrorCode.ValidationFailed, text, { ...extra, fields, field_count: count });
  }

  static field(field: string, problem: string): ApiError {
    return ApiError.validation({ [field]: [problem] });
  }

  /** The one not-found answer; a resource whose contract names its own code (agents: `agent_not_found`) passes it. */
  static notFound(what = 'Resource', code: ErrorCode.NotFound | ErrorCode.AgentNotFound = ErrorCode.NotFound): ApiError {
    return new ApiError(code, `${what} not found.`);
  }
}

/**
 * The one way a service takes a rule's result (`Checked`): the accepted
 * result, or the refusal thrown as its answer (422 naming every field,
 * unless the rule gave its own).
 */
export function accepted<C extends Checked<unknown>>(checked: C): Extract<C, { ok: true }> {
  if (!checked.ok) throw checked.answer ?? ApiError.validation(checked.fields);
  return checked as Extract<C, { ok: true }>;
}
