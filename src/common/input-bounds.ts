import { ValidateBy, type ValidationOptions } from 'class-validator';
import { ID_PREFIXES, isId, type IdKind } from '../../libs/ids/ids';
import { MAX_PLACEHOLDER_NAME_LENGTH, MAX_URL_LENGTH } from '../../libs/url-policy/url-policy';

/**
 * Upper bounds of every request input: one constant per bound, used by the
 * validator (class-validator decorators, the query pipes, the rule functions)
 * AND by the OpenAPI decorators, so what is documented is what is enforced.
 * The table with the reasons is in docs/decisions.md ("Input bounds").
 */
export const BOUNDS = {
  /** agent handle (camelCase) */
  handle: 64,
  /** display names and labels: agent name, model, source name, custom tool label */
  name: 200,
  /** agent description */
  agentDescription: 2_000,
  /** agent instructions and instructions_html, each; both at the limit stay well under the 1 MiB body limit */
  instructions: 100_000,
  /** diagnostic reason an agent was deactivated */
  deactivatedReason: 500,
  /** any URL the service stores or fetches (avatar, custom tool url, source config.url) */
  url: MAX_URL_LENGTH,
  /** any id the client sends in a body or query; the format itself is the pattern below */
  id: 64,
  /** date-time strings (RFC 3339 needs at most ~35 characters) */
  dateTime: 64,
  /** agent.tools */
  agentTools: 128,
  /** agent.connectors, agent.sub_agents, agent.data_sources */
  agentRefs: 100,
  /** data_sources[].documents */
  documentsPerSource: 1_000,
  /** custom tool description (addressed to the language model) */
  toolDescription: 4_000,
  /** custom tool parameters */
  toolParameters: 50,
  /** custom tool parameter name */
  toolParameterName: MAX_PLACEHOLDER_NAME_LENGTH,
  /** custom tool parameter description */
  toolParameterDescription: 1_000,
  /** HTTP header names: parameters[].headerName, auth.credentials.header_name, headers keys */
  headerName: 128,
  /** custom tool headers: entries */
  headers: 50,
  /** custom tool header values; secrets (token, apiKey, username, password) */
  headerValue: 4_096,
  /** custom tool body_template */
  bodyTemplate: 16_384,
  /** custom tool response_mapping (dot path) */
  responseMapping: 500,
  /** custom tool group name / icon / color */
  groupName: 100,
  groupIcon: 200,
  groupColor: 50,
  /** conversation filters model, ticket_id, q */
  filterText: 200,
  /** conversation metadata[KEY] filters: keys, key length, value length */
  metadataKeys: 20,
  metadataKey: 64,
  metadataValue: 500,
  /** free-form JSON objects (agent pending_trigger_hint): size as JSON in bytes, nesting depth */
  jsonBytes: 8_192,
  jsonDepth: 5,
  /**
   * source `config`: a crawler configuration (include/exclude lists of
   * thousands of paths fit); bounds what one row stores and the crawler reads
   */
  sourceConfigBytes: 262_144,
  /** conversation_number: a PostgreSQL integer (int32) */
  conversationNumber: 2_147_483_647,
  /** chatbot `public_id` (fixtures only: the API does not write chatbots): the widget identifier embedded in customer sites */
  chatbotPublicId: 100,
  /** chatbot `welcome_message` (fixtures only): the greeting a widget shows */
  welcomeMessage: 2_000,
} as const;

/**
 * Anchored, bounded pattern of an id as `parseId(kind, value, { allowBare })`
 * accepts it (e.g. `^(connector_[a-f0-9]{24}|[a-f0-9]{24})$`); the service
 * checks the format with parseId and answers 422 naming the field.
 */
export function idPattern(kind: IdKind, options: { allowBare?: boolean } = {}): string {
  const prefixed = `${ID_PREFIXES[kind]}_[a-f0-9]{24}`;
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
  return ValidateBy({ name: 'isIdOf', constraints: [kind], validator: { validate: (value: unknown) => isId(kind, value), defaultMessage: () => `must be ${ID_PREFIXES[kind]}_<24 lowercase hex>` } }, options);
}
