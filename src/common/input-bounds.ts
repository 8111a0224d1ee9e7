import { ValidateBy, type ValidationOptions } from 'class-validator';
import { idPrefix, isId, type IdKind } from '../../libs/ids/ids';
import { MAX_PLACEHOLDER_NAME_LENGTH, MAX_URL_LENGTH } from '../../libs/url-policy/url-policy';

/**
 * Upper bounds of every request input: one constant per bound, used by the
 * validator (class-validator decorators, the query pipes, the rule functions)
 * AND by the OpenAPI decorators, so what is documented is what is enforced.
 * Each constant's comment says what it bounds and why this number: this is
 * the table of bounds (docs/decisions.md, "Input bounds", points here;
 * test/input-bounds.e2e-spec.ts refuses a constant without its comment).
 * These are the shared ones: a bound only one module's inputs have is in that
 * module's folder (`src/<resource>/<resource>.bounds.ts`, one exported
 * `as const` object, commented the same way), and lands in the same table.
 */
export const BOUNDS = {
  /** agent handle: an identifier, not prose (plus `^[a-zA-Z][a-zA-Z0-9]*$`) */
  handle: 64,
  /** display names and labels: agent name and model, tools[].name, source name, custom tool label */
  name: 200,
  /** agent description: a summary shown in lists; long text belongs in the instructions */
  agentDescription: 2_000,
  /**
   * agent instructions and instructions_html, each: a long system prompt; both
   * at the bound (≤ 600 KB in UTF-8 for BMP text) stay under the 1 MiB body limit
   */
  instructions: 100_000,
  /** agent deactivated_reason: a diagnostic line */
  deactivatedReason: 500,
  /**
   * any URL the service stores or fetches (agent avatar, custom tool url,
   * source config.url): the common URL limit of browsers, proxies and CDNs;
   * the URL policy checks the same number
   */
  url: MAX_URL_LENGTH,
  /** any id the client sends in a body or query; the format itself is its pattern (idPattern below), checked after this length */
  id: 64,
  /** date-time strings (agent deactivated_at, every date-time query parameter): RFC 3339 needs ≤ 35; `format` alone does not bound fractional digits */
  dateTime: 64,
  /** agent tools: far above any real agent; bounds the per-request reference checks */
  agentTools: 128,
  /** agent connectors, sub_agents, data_sources, each: one query per list checks them all */
  agentRefs: 100,
  /** data_sources[].documents: a curated selection; larger sets use `scope: all` */
  documentsPerSource: 1_000,
  /** custom tool description: addressed to the language model, which needs room for when-to-call guidance */
  toolDescription: 4_000,
  /** custom tool parameters: a tool's argument list */
  toolParameters: 50,
  /** custom tool parameters[].name: a placeholder name (`[A-Za-z0-9_.-]`), as long as the URL policy's placeholders */
  toolParameterName: MAX_PLACEHOLDER_NAME_LENGTH,
  /** custom tool parameters[].description */
  toolParameterDescription: 1_000,
  /** HTTP header names (parameters[].headerName, auth.credentials.header_name, headers keys): what common servers accept in a header line */
  headerName: 128,
  /** custom tool headers, entries: with the value bound, within the 8 KiB of header lines common servers accept */
  headers: 50,
  /** custom tool header values and secrets (token, apiKey, username, password): they travel as header values */
  headerValue: 4_096,
  /** custom tool body_template: a JSON template, not a payload */
  bodyTemplate: 16_384,
  /** custom tool response_mapping: a dot path */
  responseMapping: 500,
  /** custom tool group.name: a label */
  groupName: 100,
  /** custom tool group.icon: a label */
  groupIcon: 200,
  /** custom tool group.color: a label */
  groupColor: 50,
  /** GET /conversations model, ticket_id, q: matched against values bounded the same way */
  filterText: 200,
  /** GET /conversations metadata[KEY] filters: keys per request (exact-match filters) */
  metadataKeys: 20,
  /** GET /conversations metadata[KEY]: a key's length (stated in the description: `propertyNames` is not expressible through @nestjs/swagger) */
  metadataKey: 64,
  /** GET /conversations metadata[KEY]: a value's length */
  metadataValue: 500,
  /** free-form JSON objects (agent pending_trigger_hint): size as JSON in bytes */
  jsonBytes: 8_192,
  /** free-form JSON objects (agent pending_trigger_hint): nesting depth */
  jsonDepth: 5,
  /**
   * source `config`, as JSON in bytes: a crawler configuration (include/exclude
   * lists of thousands of paths fit); bounds what one row stores and the crawler reads
   */
  sourceConfigBytes: 262_144,
  /** GET /conversations conversation_number: the column is a PostgreSQL integer (int32); a larger value cannot match and is a client error, not a 500 */
  conversationNumber: 2_147_483_647,
} as const;

/**
 * Anchored, bounded pattern of an id as `parseId(kind, value, { allowBare })`
 * accepts it (e.g. `^(connector_[a-f0-9]{24}|[a-f0-9]{24})$`); the service
 * checks the format with parseId and answers 422 naming the field.
 */
export function idPattern(kind: IdKind, options: { allowBare?: boolean } = {}): string {
  const prefixed = `${idPrefix(kind)}_[a-f0-9]{24}`;
  return options.allowBare ? `^(${prefixed}|[a-f0-9]{24})$` : `^${prefixed}$`;
}

/** Nesting depth of a JSON value: 0 for scalars, 1 for a flat object or array. */
function jsonDepth(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((max, child) => Math.max(max, jsonDepth(child)), 0);
}

/** The problem with a free-form JSON object's size or depth, or null when it is within the bounds. */
export function jsonBoundsProblem(value: unknown): string | null {
  if (Buffer.byteLength(JSON.stringify(value) ?? '') > BOUNDS.jsonBytes) return `must be at most ${BOUNDS.jsonBytes} bytes as JSON`;
  if (jsonDepth(value) > BOUNDS.jsonDepth) return `must be nested at most ${BOUNDS.jsonDepth} levels deep`;
  return null;
}

/** The validator's name: the validation pipe judges these fields on the JSON as sent, before building the DTO. */
export const BOUNDED_JSON = 'isBoundedJson';

/** class-validator: a free-form JSON object within `BOUNDS.jsonBytes` and `BOUNDS.jsonDepth`. */
export function IsBoundedJson(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: BOUNDED_JSON,
      validator: {
        validate: (value: unknown) => jsonBoundsProblem(value) === null,
        defaultMessage: (args) => `$property ${jsonBoundsProblem(args?.value) ?? 'is out of bounds'}`,
      },
    },
    options,
  );
}

/** class-validator: exactly `<prefix>_<24 lowercase hex>` of this kind (fixture ids; the pattern is `idPattern(kind)`). */
export function IsIdOf(kind: IdKind, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy({ name: 'isIdOf', constraints: [kind], validator: { validate: (value: unknown) => isId(kind, value), defaultMessage: () => `must be ${idPrefix(kind)}_<24 lowercase hex>` } }, options);
}
