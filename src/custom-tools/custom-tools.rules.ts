import type { FieldErrors } from '../common/api-error';
import { addFieldError, mergeFieldErrors, refused, type Checked } from '../common/field-errors';
import { BOUNDS } from '../common/input-bounds';
import { outboundUrlProblem, PLACEHOLDER_NAME_CHARS, placeholderPattern } from '../../libs/url-policy/url-policy';
import type { customTools, CustomToolGroupRow, CustomToolParamRow } from './custom-tools.table';

/**
 * The rules a custom tool definition must satisfy and the one way its stored
 * row is built, as pure functions shared by the API (422 naming the field)
 * and the fixture loader (error naming the path): every rule holds the same
 * on both. Problems never quote submitted values: a credential must never
 * come back in an error.
 */

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const TOOL_TYPES = ['read', 'write'] as const;
export const PARAM_TYPES = ['string', 'number', 'boolean', 'integer'] as const;
export const PARAM_LOCATIONS = ['query', 'header', 'body'] as const;
export const AUTH_TYPES = ['none', 'bearer', 'api_key', 'basic'] as const;
type AuthType = (typeof AUTH_TYPES)[number];

const DEFAULT_API_KEY_HEADER = 'X-API-Key';
const TOOL_NAME_PREFIX = 'custom_';
const MAX_SLUG_LENGTH = 48;

/** RFC 9110 token: what an HTTP header name may consist of. */
export const HEADER_NAME = new RegExp(`^[!#$%&'*+.^_\`|~0-9A-Za-z-]{1,${BOUNDS.headerName}}$`);
/** Parameter names double as placeholder names: the same charset and length (url-policy's placeholder pattern). */
export const PARAM_NAME = new RegExp(`^[${PLACEHOLDER_NAME_CHARS}]{1,${BOUNDS.toolParameterName}}$`);
/**
 * Outbound headers the platform writes itself, refused in every field that
 * names an outbound header (`headers` keys, `parameters[].headerName`,
 * `auth.credentials.header_name`) with the same reason, so no field reaches
 * what another refuses. Each group protects something:
 * - credentials go through `auth`, encrypted and never returned: a plain
 *   header is stored and returned in clear, and a header parameter would let
 *   whoever calls the tool choose them;
 * - framing (`Host`, `Content-Length`, `Transfer-Encoding`, `TE`, `Trailer`,
 *   `Expect`) is the HTTP client's: a second value desynchronizes the target
 *   and any proxy between (request smuggling) or redirects the request;
 * - hop-by-hop connection headers (RFC 9110 section 7.6.1: `Connection`,
 *   `Keep-Alive`, `Proxy-Connection`, `Upgrade`) govern the platform's own
 *   connection, and `Connection: <name>` strips any other header on the way;
 * - forwarding headers (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`) are a
 *   proxy's word on who the client is, which targets trust for allow-lists.
 */
const RESERVED_HEADERS = new Map<string, string>([
  ...['authorization', 'proxy-authorization', 'cookie'].map((name) => [name, 'carries credentials: send them through auth, which is encrypted and never returned (plain headers are stored unencrypted and returned in responses)'] as const),
  ...['host', 'content-length', 'transfer-encoding', 'te', 'trailer', 'expect'].map((name) => [name, 'frames the request and is set by the HTTP client'] as const),
  ...['connection', 'keep-alive', 'proxy-connection', 'upgrade'].map((name) => [name, 'governs the connection and is set by the HTTP client'] as const),
  ...['forwarded', 'x-real-ip'].map((name) => [name, "is a proxy's statement about the client and is never set by a tool"] as const),
]);
const FORWARDING_PREFIX = 'x-forwarded-';

/** The reserved names, for the OpenAPI description of every field that names an outbound header. */
export const RESERVED_HEADER_RULES =
  'Refused as names (any case): `Authorization`, `Proxy-Authorization`, `Cookie` (credentials go through `auth`, encrypted and never returned); ' +
  '`Host`, `Content-Length`, `Transfer-Encoding`, `TE`, `Trailer`, `Expect` (framing, set by the HTTP client); ' +
  '`Connection`, `Keep-Alive`, `Proxy-Connection`, `Upgrade` (hop-by-hop); `Forwarded`, `X-Forwarded-*`, `X-Real-IP` (a proxy\'s statement about the client).';

function isHeaderName(value: string): boolean {
  return HEADER_NAME.test(value);
}

/** The one rule for a name an outbound header will carry: an HTTP token, not one the platform writes itself. */
function outboundHeaderNameProblem(name: string): string | null {
  if (!isHeaderName(name)) return 'must be a valid HTTP header name';
  const lower = name.toLowerCase();
  const reserved = RESERVED_HEADERS.get(lower) ?? (lower.startsWith(FORWARDING_PREFIX) ? RESERVED_HEADERS.get('forwarded')! : undefined);
  return reserved === undefined ? null : `must not name the ${name} header: it ${reserved}`;
}

/** Control characters other than tab: CR and LF end a header (a second one is injected after them), NUL and the others are refused by servers or cut the value. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const HEADER_VALUE_CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;
/** The same rule as a JSON Schema pattern, for the served document: no such character anywhere. */
export const HEADER_VALUE_PATTERN = `^[^${HEADER_VALUE_CONTROL.source.slice(1, -1)}]*$`;
const HEADER_VALUE_PROBLEM = 'must not contain control characters (CR, LF, NUL and the others except tab): they would end or split the header';

/** The one rule for a value an outbound header will carry (plain header values and credentials alike). */
function outboundHeaderValueProblem(value: string): string | null {
  return HEADER_VALUE_CONTROL.test(value) ? HEADER_VALUE_PROBLEM : null;
}

/** `custom_` + lower snake_case of the label (ASCII, accents folded); `custom_tool` when nothing is left. */
export function toolNameBase(label: string): string {
  const slug = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_SLUG_LENGTH)
    .replace(/_+$/g, '');
  return `${TOOL_NAME_PREFIX}${slug || 'tool'}`;
}

/** The first free name: `base`, else `base_2`, `base_3`, … given the taken names that share the base. */
export function firstFreeToolName(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}_${n}`;
    if (!used.has(candidate)) return candidate;
  }
}

interface ParamInput {
  name: string;
  type?: string;
  description?: string;
  required?: boolean;
  in?: string;
  headerName?: string;
}

/** The stored group: icon and color default to null. */
function groupRow(group: { name: string; icon?: string | null; color?: string | null } | null | undefined): CustomToolGroupRow | null {
  return group ? { name: group.name, icon: group.icon ?? null, color: group.color ?? null } : null;
}

/**
 * The contract's defaults: `type` string, `required` false, `in` query for GET and body
 * otherwise; `headerName` of a header parameter defaults to its name.
 */
function resolveParameters(params: ParamInput[], method: string): CustomToolParamRow[] {
  return params.map((param) => {
    const row: CustomToolParamRow = {
      name: param.name,
      type: (param.type ?? 'string') as CustomToolParamRow['type'],
      required: param.required ?? false,
      in: (param.in ?? (method === 'GET' ? 'query' : 'body')) as CustomToolParamRow['in'],
    };
    if (param.description !== undefined) row.description = param.description;
    if (param.headerName !== undefined) row.headerName = param.headerName;
    else if (row.in === 'header') row.headerName = param.name;
    return row;
  });
}

/**
 * How `body_template` placeholders are substituted (and so how it is
 * validated): a placeholder inside a JSON string literal is replaced by the
 * value as string content (`"Hi {{name}}"`); a bare placeholder stands for a
 * whole JSON value (`{"count": {{count}}}`), the argument serialized as JSON.
 * For validation, the first becomes `x` and the second `null`, and the
 * result must parse as JSON.
 */
export function substituteForValidation(template: string): string {
  const placeholder = placeholderPattern();
  let out = '';
  let inString = false;
  for (let i = 0; i < template.length; i++) {
    const char = template[i];
    if (char === '{' && template[i + 1] === '{') {
      placeholder.lastIndex = i;
      const match = placeholder.exec(template);
      if (match?.index === i) {
        out += inString ? 'x' : 'null';
        i += match[0].length - 1;
        continue;
      }
    }
    if (inString && char === '\\') {
      out += char + (template[i + 1] ?? '');
      i++;
      continue;
    }
    if (char === '"') inString = !inString;
    out += char;
  }
  return out;
}

interface ToolDefinition {
  method: string;
  url: string;
  headers: Record<string, unknown>;
  bodyTemplate: string | null;
  parameters: CustomToolParamRow[];
}

/**
 * Every problem of a (merged) definition, by field. Empty when valid.
 * Placeholders need no declared parameter: undeclared ones are kept as written.
 */
function definitionProblems(def: ToolDefinition): FieldErrors {
  const fields: FieldErrors = {};
  const declared = new Set<string>();

  def.parameters.forEach((param, index) => {
    const at = `parameters[${index}]`;
    if (!PARAM_NAME.test(param.name)) {
      addFieldError(fields, `${at}.name`, `must be 1 to ${BOUNDS.toolParameterName} characters of letters, digits, underscores, dots and hyphens`);
    } else if (declared.has(param.name)) {
      addFieldError(fields, `${at}.name`, 'duplicates an earlier parameter name');
    }
    declared.add(param.name);
    const headerNameProblem = param.headerName === undefined ? null : outboundHeaderNameProblem(param.headerName);
    // a header parameter without headerName sends its name: the field to fix is still headerName or name
    if (headerNameProblem) addFieldError(fields, param.headerName === param.name && param.in === 'header' ? `${at}.name` : `${at}.headerName`, headerNameProblem);
  });

  const urlProblem = outboundUrlProblem(def.url, { allowPlaceholders: true });
  if (urlProblem) addFieldError(fields, 'url', urlProblem);

  if (def.bodyTemplate !== null) {
    try {
      JSON.parse(substituteForValidation(def.bodyTemplate));
    } catch {
      addFieldError(fields, 'body_template', 'must be valid JSON once placeholders are substituted');
    }
  }

  const headerNames = Object.keys(def.headers);
  if (headerNames.length > BOUNDS.headers) addFieldError(fields, 'headers', `must have at most ${BOUNDS.headers} entries`);
  for (const name of headerNames) {
    const value = def.headers[name];
    const nameProblem = outboundHeaderNameProblem(name);
    const at = isHeaderName(name) ? `headers.${name}` : 'headers';
    if (nameProblem) addFieldError(fields, at, isHeaderName(name) ? nameProblem : 'keys must be valid HTTP header names');
    if (typeof value !== 'string') addFieldError(fields, at, 'values must be strings');
    else if (value.length > BOUNDS.headerValue) addFieldError(fields, at, `values must be at most ${BOUNDS.headerValue} characters`);
    else if (outboundHeaderValueProblem(value)) addFieldError(fields, at, HEADER_VALUE_PROBLEM);
  }
  return fields;
}

interface CredentialsInput {
  token?: string;
  apiKey?: string;
  header_name?: string;
  username?: string;
  password?: string;
}

/** What is encrypted: the secret fields of the auth type that were sent, nothing else. */
export type StoredCredentials = Partial<Record<'token' | 'apiKey' | 'username' | 'password', string>>;

/** The credentials fields each type uses; any other field sent is dropped, never stored. */
const SECRET_KEYS: Record<AuthType, Array<keyof StoredCredentials>> = {
  none: [],
  bearer: ['token'],
  api_key: ['apiKey'],
  basic: ['username', 'password'],
};

export interface AuthInput {
  type: string;
  credentials?: CredentialsInput;
}

export interface CurrentAuth {
  type: string;
  headerName: string | null;
}

/** What a create or update does to the stored auth: keep it, or set it to this. */
export type AuthChange = { kind: 'unchanged' } | { kind: 'set'; type: AuthType; headerName: string | null; credentials: StoredCredentials | null };

/**
 * Turns `auth` of a create (current = null) or update into what to store.
 * `credentials` is optional. A fresh `credentials` object replaces the stored
 * one: fields it lacks are absent, fields the type does not use are dropped.
 * Without `credentials`, the same type keeps the stored secrets and a new
 * type drops them.
 */
export function resolveAuth(input: AuthInput | undefined, current: CurrentAuth | null, credentialsPath = 'auth.credentials'): Checked<AuthChange> {
  if (input === undefined) return { ok: true, value: current ? { kind: 'unchanged' } : { kind: 'set', type: 'none', headerName: null, credentials: null } };
  const type = input.type as AuthType;
  const credentials = input.credentials;
  if (credentials === undefined && current?.type === type) return { ok: true, value: { kind: 'unchanged' } };

  const invalid: FieldErrors = {};
  let headerName: string | null = null;
  if (type === 'api_key') {
    headerName = credentials?.header_name ?? DEFAULT_API_KEY_HEADER;
    const problem = outboundHeaderNameProblem(headerName);
    if (problem) invalid[`${credentialsPath}.header_name`] = [problem];
  }
  const stored: StoredCredentials = {};
  for (const key of SECRET_KEYS[type]) {
    const value = credentials?.[key];
    if (value === undefined) continue;
    // every secret ends up in a header (basic ones base64-encoded, where RFC 7617 still forbids controls)
    const problem = outboundHeaderValueProblem(value);
    if (problem) invalid[`${credentialsPath}.${key}`] = [problem];
    else if (key === 'username' && value.includes(':')) invalid[`${credentialsPath}.${key}`] = ['must not contain a colon: basic authentication joins user and password with one (RFC 7617)'];
    stored[key] = value;
  }
  if (Object.keys(invalid).length > 0) return refused(invalid);
  return { ok: true, value: { kind: 'set', type, headerName, credentials: Object.keys(stored).length > 0 ? stored : null } };
}

// ---------- the stored row ----------

type NewCustomToolRow = typeof customTools.$inferInsert;

/** The stored columns a definition decides (id, org, name, activity and timestamps are the caller's). */
export type ToolDefinitionRow = Required<
  Pick<NewCustomToolRow, 'label' | 'description' | 'type' | 'method' | 'url' | 'headers' | 'bodyTemplate' | 'parameters' | 'responseMapping' | 'authType' | 'authHeaderName' | 'group'>
>;

export interface ToolInput {
  label: string;
  description: string;
  type?: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  body_template?: string | null;
  parameters?: ParamInput[];
  response_mapping?: string | null;
  auth?: AuthInput;
  group?: { name: string; icon?: string | null; color?: string | null } | null;
}

export type ToolPatch = Partial<ToolInput>;

/**
 * The one way a new tool's row is built, for POST /custom_tools and the
 * fixture loader alike: defaults applied, every rule checked.
 * `credentialsPath` names the credentials in problems (fixtures keep them at
 * the top level).
 */
export function buildToolRow(input: ToolInput, credentialsPath = 'auth.credentials'): Checked<ToolDefinitionRow, { credentials: StoredCredentials | null }> {
  const parameters = resolveParameters(input.parameters ?? [], input.method);
  const headers = input.headers ?? {};
  const bodyTemplate = input.body_template ?? null;
  const auth = resolveAuth(input.auth, null, credentialsPath);
  const fields = mergeFieldErrors(
    {},
    definitionProblems({ method: input.method, url: input.url, headers, bodyTemplate, parameters }),
    auth.ok ? {} : auth.fields,
  );
  // a create has no stored auth to keep: `resolveAuth` without a current one always sets
  if (Object.keys(fields).length > 0 || !auth.ok || auth.value.kind !== 'set') return refused(fields);
  const set = auth.value;
  return {
    ok: true,
    value: {
      label: input.label,
      description: input.description,
      type: input.type ?? 'read',
      method: input.method,
      url: input.url,
      headers,
      bodyTemplate,
      parameters,
      responseMapping: input.response_mapping ?? null,
      authType: set.type,
      authHeaderName: set.headerName,
      group: groupRow(input.group),
    },
    credentials: set.credentials,
  };
}

/**
 * The changes a PATCH makes to a stored row, under the same rules as
 * `buildToolRow` applied to the merged definition. `credentials` undefined:
 * the stored secrets stay.
 */
export function buildToolChanges(current: ToolDefinitionRow, patch: ToolPatch): Checked<Partial<ToolDefinitionRow>, { credentials: StoredCredentials | null | undefined }> {
  const method = patch.method ?? current.method;
  const parameters = patch.parameters !== undefined ? resolveParameters(patch.parameters, method) : current.parameters;
  const auth = resolveAuth(patch.auth, { type: current.authType, headerName: current.authHeaderName });
  const fields = mergeFieldErrors(
    {},
    definitionProblems({
      method,
      url: patch.url ?? current.url,
      headers: patch.headers ?? current.headers,
      bodyTemplate: patch.body_template !== undefined ? patch.body_template : current.bodyTemplate,
      parameters,
    }),
    auth.ok ? {} : auth.fields,
  );
  if (Object.keys(fields).length > 0 || !auth.ok) return refused(fields);

  const changes: Partial<ToolDefinitionRow> = {};
  if (patch.label !== undefined) changes.label = patch.label;
  if (patch.description !== undefined) changes.description = patch.description;
  if (patch.type !== undefined) changes.type = patch.type;
  if (patch.method !== undefined) changes.method = patch.method;
  if (patch.url !== undefined) changes.url = patch.url;
  if (patch.headers !== undefined) changes.headers = patch.headers;
  if (patch.body_template !== undefined) changes.bodyTemplate = patch.body_template;
  if (patch.parameters !== undefined) changes.parameters = parameters;
  if (patch.response_mapping !== undefined) changes.responseMapping = patch.response_mapping;
  if (patch.group !== undefined) changes.group = groupRow(patch.group);
  let credentials: StoredCredentials | null | undefined;
  if (auth.value.kind === 'set') {
    changes.authType = auth.value.type;
    changes.authHeaderName = auth.value.headerName;
    credentials = auth.value.credentials;
  }
  return { ok: true, value: changes, credentials };
}
