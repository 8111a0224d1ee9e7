import type { FieldErrors } from '../common/api-error';
import { BOUNDS } from '../common/input-bounds';
import { outboundUrlProblem } from '../common/url-policy';
import type { CustomToolGroupRow, CustomToolParamRow } from '../database/schema';

/**
 * The rules a custom tool definition must satisfy, as pure functions shared
 * by the API (422 naming the field) and the fixture loader (error naming the
 * path). Problems never quote submitted values: a credential must never come
 * back in an error.
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
/** Parameter names double as placeholder names and JSON-schema property names. */
export const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Credentials travel through `auth`, encrypted; never as plain headers that are returned. */
const RESERVED_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'host', 'content-length', 'transfer-encoding']);

/** `{{ name }}` (inner blanks tolerated). */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

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

/** Spec defaults: `type` string, `required` false, `in` query for GET and body otherwise. */
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
    return row;
  });
}

export function placeholderNames(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((match) => match[1]);
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
  let out = '';
  let inString = false;
  for (let i = 0; i < template.length; i++) {
    const char = template[i];
    if (char === '{' && template[i + 1] === '{') {
      const end = template.indexOf('}}', i + 2);
      if (end !== -1 && !template.slice(i + 2, end).includes('{')) {
        out += inString ? 'x' : 'null';
        i = end + 1;
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

/** Every problem of a (merged) definition, by field. Empty when valid. */
export function definitionProblems(def: ToolDefinition): FieldErrors {
  const fields: FieldErrors = {};
  const declared = new Set<string>();

  def.parameters.forEach((param, index) => {
    const at = `parameters[${index}]`;
    if (!PARAM_NAME.test(param.name)) {
      add(fields, `${at}.name`, 'must start with a letter or underscore and hold only letters, digits and underscores (at most 64)');
    } else if (declared.has(param.name)) {
      add(fields, `${at}.name`, 'duplicates an earlier parameter name');
    }
    declared.add(param.name);
    if (param.in === 'header') {
      if (param.headerName === undefined || param.headerName === '') add(fields, `${at}.headerName`, 'is required when in is header');
      else if (!isHeaderName(param.headerName)) add(fields, `${at}.headerName`, 'must be a valid HTTP header name');
    }
  });

  const urlProblem = outboundUrlProblem(def.url, { allowPlaceholders: true });
  if (urlProblem) add(fields, 'url', urlProblem);
  for (const name of placeholderNames(def.url)) {
    if (!declared.has(name)) add(fields, 'url', `placeholder {{${name}}} names no declared parameter`);
  }

  if (def.bodyTemplate !== null) {
    for (const name of placeholderNames(def.bodyTemplate)) {
      if (!declared.has(name)) add(fields, 'body_template', `placeholder {{${name}}} names no declared parameter`);
    }
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
    else if (RESERVED_HEADERS.has(name.toLowerCase())) {
      add(fields, `headers.${name}`, 'is managed by the platform; send credentials through auth');
    }
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

/** What is encrypted: only the secret fields of the auth type. */
export type StoredCredentials = { token: string } | { apiKey: string } | { username: string; password: string };

const CREDENTIAL_KEYS: Record<Exclude<AuthType, 'none'>, Array<keyof CredentialsInput>> = {
  bearer: ['token'],
  api_key: ['apiKey', 'header_name'],
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
 * Sending credentials rotates them; omitting them keeps them when the type is
 * unchanged; a new non-`none` type without credentials is refused.
 */
export function resolveAuth(input: AuthInput | undefined, current: CurrentAuth | null, credentialsPath = 'auth.credentials'): AuthResolution {
  if (input === undefined) return current ? { kind: 'unchanged' } : { kind: 'set', type: 'none', headerName: null, credentials: null };
  const fields: FieldErrors = {};
  const type = input.type as AuthType;
  const credentials = input.credentials;
  const given = credentials ? (Object.keys(credentials) as Array<keyof CredentialsInput>).filter((key) => credentials[key] !== undefined) : [];

  if (type === 'none') {
    if (given.length > 0) add(fields, credentialsPath, 'must not be sent when auth.type is none');
    return Object.keys(fields).length ? { kind: 'invalid', fields } : { kind: 'set', type, headerName: null, credentials: null };
  }

  if (!credentials) {
    if (current && current.type === type) return { kind: 'unchanged' };
    add(fields, credentialsPath, current ? 'are required when auth.type changes' : `are required when auth.type is ${type}`);
    return { kind: 'invalid', fields };
  }

  const allowed = CREDENTIAL_KEYS[type];
  for (const key of given) {
    if (!allowed.includes(key)) add(fields, `${credentialsPath}.${key}`, `is not used with auth.type ${type}`);
  }
  const required = (key: keyof CredentialsInput) => {
    if (typeof credentials[key] !== 'string' || credentials[key] === '') add(fields, `${credentialsPath}.${key}`, `is required when auth.type is ${type}`);
  };
  let stored: StoredCredentials;
  let headerName: string | null = null;
  if (type === 'bearer') {
    required('token');
    stored = { token: credentials.token! };
  } else if (type === 'api_key') {
    required('apiKey');
    headerName = credentials.header_name ?? DEFAULT_API_KEY_HEADER;
    if (!isHeaderName(headerName)) add(fields, `${credentialsPath}.header_name`, 'must be a valid HTTP header name');
    stored = { apiKey: credentials.apiKey! };
  } else {
    required('username');
    if (typeof credentials.password !== 'string') add(fields, `${credentialsPath}.password`, 'is required when auth.type is basic');
    stored = { username: credentials.username!, password: credentials.password! };
  }
  return Object.keys(fields).length ? { kind: 'invalid', fields } : { kind: 'set', type, headerName, credentials: stored };
}
