import type { FieldErrors } from '../common/api-error';
import { BOUNDS } from '../common/input-bounds';
import { outboundUrlProblem, PLACEHOLDER_NAME_CHARS, placeholderPattern } from '../common/url-policy';
import type { customTools, CustomToolGroupRow, CustomToolParamRow } from '../database/schema';

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
export type AuthType = (typeof AUTH_TYPES)[number];

export const DEFAULT_API_KEY_HEADER = 'X-API-Key';
export const TOOL_NAME_PREFIX = 'custom_';
const MAX_SLUG_LENGTH = 48;
export const MAX_PARAMETERS = BOUNDS.toolParameters;
export const MAX_HEADERS = BOUNDS.headers;

/** RFC 9110 token: what an HTTP header name may consist of. */
const HEADER_NAME = new RegExp(`^[!#$%&'*+.^_\`|~0-9A-Za-z-]{1,${BOUNDS.headerName}}$`);
/** Parameter names double as placeholder names: the same charset and length (url-policy's placeholder pattern). */
export const PARAM_NAME = new RegExp(`^[${PLACEHOLDER_NAME_CHARS}]{1,${BOUNDS.toolParameterName}}$`);
/**
 * Plain `headers` are stored unencrypted and returned in every response, so
 * they may not carry credentials; the others are set by the HTTP client itself.
 */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);
const TRANSPORT_HEADERS = new Set(['host', 'content-length', 'transfer-encoding']);
const CREDENTIAL_HEADER_PROBLEM =
  'must not be a plain header: plain headers are stored unencrypted and returned in responses; send credentials through auth, which is encrypted and never returned';

export function isHeaderName(value: string): boolean {
  return HEADER_NAME.test(value);
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

export interface ParamInput {
  name: string;
  type?: string;
  description?: string;
  required?: boolean;
  in?: string;
  headerName?: string;
}

/** The stored group: icon and color default to null. */
export function groupRow(group: { name: string; icon?: string | null; color?: string | null } | null | undefined): CustomToolGroupRow | null {
  return group ? { name: group.name, icon: group.icon ?? null, color: group.color ?? null } : null;
}

/**
 * The contract's defaults: `type` string, `required` false, `in` query for GET and body
 * otherwise; `headerName` of a header parameter defaults to its name.
 */
export function resolveParameters(params: ParamInput[], method: string): CustomToolParamRow[] {
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

export interface ToolDefinition {
  method: string;
  url: string;
  headers: Record<string, unknown>;
  bodyTemplate: string | null;
  parameters: CustomToolParamRow[];
}

function add(fields: FieldErrors, field: string, problem: string): void {
  (fields[field] ??= []).push(problem);
}

/**
 * Every problem of a (merged) definition, by field. Empty when valid.
 * Placeholders need no declared parameter: undeclared ones are kept as written.
 */
export function definitionProblems(def: ToolDefinition): FieldErrors {
  const fields: FieldErrors = {};
  const declared = new Set<string>();

  def.parameters.forEach((param, index) => {
    const at = `parameters[${index}]`;
    if (!PARAM_NAME.test(param.name)) {
      add(fields, `${at}.name`, `must be 1 to ${BOUNDS.toolParameterName} characters of letters, digits, underscores, dots and hyphens`);
    } else if (declared.has(param.name)) {
      add(fields, `${at}.name`, 'duplicates an earlier parameter name');
    }
    declared.add(param.name);
    if (param.headerName !== undefined && !isHeaderName(param.headerName)) add(fields, `${at}.headerName`, 'must be a valid HTTP header name');
  });

  const urlProblem = outboundUrlProblem(def.url, { allowPlaceholders: true });
  if (urlProblem) add(fields, 'url', urlProblem);

  if (def.bodyTemplate !== null) {
    try {
      JSON.parse(substituteForValidation(def.bodyTemplate));
    } catch {
      add(fields, 'body_template', 'must be valid JSON once placeholders are substituted');
    }
  }

  const headerNames = Object.keys(def.headers);
  if (headerNames.length > MAX_HEADERS) add(fields, 'headers', `must have at most ${MAX_HEADERS} entries`);
  for (const name of headerNames) {
    const value = def.headers[name];
    if (!isHeaderName(name)) add(fields, 'headers', 'keys must be valid HTTP header names');
    else if (CREDENTIAL_HEADERS.has(name.toLowerCase())) add(fields, `headers.${name}`, CREDENTIAL_HEADER_PROBLEM);
    else if (TRANSPORT_HEADERS.has(name.toLowerCase())) add(fields, `headers.${name}`, 'is set by the HTTP client when the tool is called');
    if (typeof value !== 'string') add(fields, isHeaderName(name) ? `headers.${name}` : 'headers', 'values must be strings');
    else if (/[\r\n\0]/.test(value) || value.length > BOUNDS.headerValue) {
      add(fields, isHeaderName(name) ? `headers.${name}` : 'headers', `values must be single-line and at most ${BOUNDS.headerValue} characters`);
    }
  }
  return fields;
}

export interface CredentialsInput {
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

export type AuthResolution =
  | { kind: 'invalid'; fields: FieldErrors }
  | { kind: 'unchanged' }
  | { kind: 'set'; type: AuthType; headerName: string | null; credentials: StoredCredentials | null };

/**
 * Turns `auth` of a create (current = null) or update into what to store.
 * `credentials` is optional. A fresh `credentials` object replaces the stored
 * one: fields it lacks are absent, fields the type does not use are dropped.
 * Without `credentials`, the same type keeps the stored secrets and a new
 * type drops them.
 */
export function resolveAuth(input: AuthInput | undefined, current: CurrentAuth | null, credentialsPath = 'auth.credentials'): AuthResolution {
  if (input === undefined) return current ? { kind: 'unchanged' } : { kind: 'set', type: 'none', headerName: null, credentials: null };
  const type = input.type as AuthType;
  const credentials = input.credentials;
  if (credentials === undefined && current?.type === type) return { kind: 'unchanged' };

  let headerName: string | null = null;
  if (type === 'api_key') {
    headerName = credentials?.header_name ?? DEFAULT_API_KEY_HEADER;
    if (!isHeaderName(headerName)) return { kind: 'invalid', fields: { [`${credentialsPath}.header_name`]: ['must be a valid HTTP header name'] } };
  }
  const stored: StoredCredentials = {};
  for (const key of SECRET_KEYS[type]) {
    const value = credentials?.[key];
    if (value !== undefined) stored[key] = value;
  }
  return { kind: 'set', type, headerName, credentials: Object.keys(stored).length > 0 ? stored : null };
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

export type Built<T> = { ok: true; value: T; credentials: StoredCredentials | null | undefined } | { ok: false; fields: FieldErrors };

function mergeFields(...all: FieldErrors[]): FieldErrors {
  const out: FieldErrors = {};
  for (const fields of all) for (const [key, problems] of Object.entries(fields)) (out[key] ??= []).push(...problems);
  return out;
}

/**
 * The one way a new tool's row is built, for POST /custom_tools and the
 * fixture loader alike: defaults applied, every rule checked.
 * `credentialsPath` names the credentials in problems (fixtures keep them at
 * the top level).
 */
export function buildToolRow(input: ToolInput, credentialsPath = 'auth.credentials'): Built<ToolDefinitionRow> {
  const parameters = resolveParameters(input.parameters ?? [], input.method);
  const headers = input.headers ?? {};
  const bodyTemplate = input.body_template ?? null;
  const auth = resolveAuth(input.auth, null, credentialsPath);
  const fields = mergeFields(
    definitionProblems({ method: input.method, url: input.url, headers, bodyTemplate, parameters }),
    auth.kind === 'invalid' ? auth.fields : {},
  );
  if (Object.keys(fields).length > 0 || auth.kind !== 'set') return { ok: false, fields };
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
      authType: auth.type,
      authHeaderName: auth.headerName,
      group: groupRow(input.group),
    },
    credentials: auth.credentials,
  };
}

/**
 * The changes a PATCH makes to a stored row, under the same rules as
 * `buildToolRow` applied to the merged definition. `credentials` undefined:
 * the stored secrets stay.
 */
export function buildToolChanges(current: ToolDefinitionRow, patch: ToolPatch): Built<Partial<ToolDefinitionRow>> {
  const method = patch.method ?? current.method;
  const parameters = patch.parameters !== undefined ? resolveParameters(patch.parameters, method) : current.parameters;
  const auth = resolveAuth(patch.auth, { type: current.authType, headerName: current.authHeaderName });
  const fields = mergeFields(
    definitionProblems({
      method,
      url: patch.url ?? current.url,
      headers: patch.headers ?? current.headers,
      bodyTemplate: patch.body_template !== undefined ? patch.body_template : current.bodyTemplate,
      parameters,
    }),
    auth.kind === 'invalid' ? auth.fields : {},
  );
  if (Object.keys(fields).length > 0) return { ok: false, fields };

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
  if (auth.kind === 'set') {
    changes.authType = auth.type;
    changes.authHeaderName = auth.headerName;
    credentials = auth.credentials;
  }
  return { ok: true, value: changes, credentials };
}
