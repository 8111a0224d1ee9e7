import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { request as httpRequest, Agent } from 'node:http';
import { connect } from 'node:net';
import { recordStatus } from './status-recorder';

/**
 * Everything the hostile-input tests know about the API comes from the served
 * /openapi.json: operations, parameters, request bodies, documented responses.
 * So they cover every endpoint that exists, including ones added later.
 */
export type Schema = Record<string, unknown>;
export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, Schema> };
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}

export interface Operation {
  method: string;
  /** path template, relative to the server (e.g. `/agents/{id}`) */
  path: string;
  operationId: string;
  parameters: Parameter[];
  /** JSON request body schema, if the operation takes one */
  body: Schema | null;
  bodyRequired: boolean;
  /** status (or `4XX`/`default`) → JSON schema of the body; null: no body documented */
  responses: Record<string, Schema | null>;
  security: boolean;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

export function operationsOf(document: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const shared = ((item as { parameters?: Parameter[] }).parameters ?? []) as Parameter[];
    for (const method of METHODS) {
      const op = item[method] as Record<string, unknown> | undefined;
      if (!op) continue;
      const requestBody = op.requestBody as { required?: boolean; content?: Record<string, { schema?: Schema }> } | undefined;
      const responses: Record<string, Schema | null> = {};
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, { content?: Record<string, { schema?: Schema }> }>)) {
        responses[status] = response.content?.['application/json']?.schema ?? null;
      }
      const security = op.security as unknown[] | undefined;
      operations.push({
        method: method.toUpperCase(),
        path,
        operationId: String(op.operationId ?? `${method} ${path}`),
        parameters: [...shared, ...((op.parameters ?? []) as Parameter[])],
        body: requestBody?.content?.['application/json']?.schema ?? null,
        bodyRequired: requestBody?.required === true,
        responses,
        security: !(Array.isArray(security) && security.length === 0),
      });
    }
  }
  return operations;
}

/** Resolves local `#/components/...` references. */
export function resolver(document: OpenApiDocument) {
  return function resolve(schema: Schema | undefined): Schema {
    let current: Schema = schema ?? {};
    for (let hops = 0; hops < 20 && typeof current.$ref === 'string'; hops++) {
      const pointer = (current.$ref as string).replace(/^#\//, '').split('/');
      let node: unknown = document;
      for (const part of pointer) node = (node as Record<string, unknown>)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      current = (node ?? {}) as Schema;
    }
    return current;
  };
}

/** Ajv 2020 over the document's components, with formats; schemas compiled once. */
export class ResponseValidator {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<Schema, ValidateFunction>();

  constructor(document: OpenApiDocument) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    for (const format of ['int32', 'int64', 'float', 'double', 'byte', 'binary', 'password']) this.ajv.addFormat(format, true);
    this.ajv.addSchema({ $id: 'openapi:doc', components: document.components ?? {} });
  }

  /** null when the body matches, else Ajv's complaints */
  check(schema: Schema, body: unknown): string | null {
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(rewriteRefs(schema) as Schema);
      this.compiled.set(schema, validate);
    }
    return validate(body) ? null : this.ajv.errorsText(validate.errors, { separator: '; ' });
  }
}

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] = key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `openapi:doc${value}` : rewriteRefs(value);
  }
  return out;
}

/** The documented response schema for a status: exact, then `4XX`, then `default`. */
export function documentedResponse(op: Operation, status: number): { documented: boolean; schema: Schema | null } {
  for (const key of [String(status), `${String(status)[0]}XX`, 'default']) {
    if (key in op.responses) return { documented: true, schema: op.responses[key] };
  }
  return { documented: false, schema: null };
}

// ---------------------------------------------------------------- generators

const DATE = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true });

/** Values that match a schema (fast-check arbitrary), following the document's refs. */
export function valueOf(schema: Schema | undefined, resolve: (s: Schema | undefined) => Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum) && s.enum.length > 0) return fc.constantFrom(...(s.enum as unknown[]));
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (!Array.isArray(s[key])) continue;
    const { [key]: branches, ...base } = s;
    // branches beside properties add rules to the object (the instructions rule: one of two fields required), they are no alternatives of their own
    if (base.properties) {
      return fc.oneof(
        ...(branches as Schema[]).map((branch) =>
          valueOf(
            {
              ...base,
              ...resolve(branch),
              properties: { ...(base.properties as object), ...((resolve(branch).properties as object) ?? {}) },
              required: [...((base.required as string[]) ?? []), ...((resolve(branch).required as string[]) ?? [])],
            },
            resolve,
            depth + 1,
          ),
        ),
      );
    }
    return fc.oneof(...(branches as Schema[]).map((sub) => valueOf(sub, resolve, depth + 1)));
  }
  if (Array.isArray(s.allOf)) {
    const parts = (s.allOf as Schema[]).map(resolve);
    const { allOf: _allOf, ...rest } = s;
    const merged: Schema = { ...rest };
    for (const part of parts) {
      merged.properties = { ...((merged.properties as object) ?? {}), ...((part.properties as object) ?? {}) };
      merged.required = [...((merged.required as string[]) ?? []), ...((part.required as string[]) ?? [])];
      if (!merged.type && part.type) merged.type = part.type;
      // an entry's anyOf/oneOf (AgentCreate's instructions rule) stays a rule on the merged object
      for (const k of ['pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'items', 'enum', 'anyOf', 'oneOf']) if (part[k] !== undefined && merged[k] === undefined) merged[k] = part[k];
    }
    return valueOf(merged, resolve, depth + 1);
  }
  const types = Array.isArray(s.type) ? (s.type as string[]) : s.type ? [s.type as string] : s.properties ? ['object'] : ['string'];
  return fc.oneof(...types.map((type) => valueOfType(type, s, resolve, depth)));
}

function valueOfType(type: string, s: Schema, resolve: (s: Schema | undefined) => Schema, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: num(s.minimum, -1_000_000), max: num(s.maximum, 1_000_000) });
    case 'number':
      return fc.double({ min: num(s.minimum, -1e6), max: num(s.maximum, 1e6), noNaN: true, noDefaultInfinity: true });
    case 'array': {
      if (depth > 5) return fc.constant([]);
      const item = valueOf(s.items as Schema, resolve, depth + 1);
      const constraints = { minLength: num(s.minItems, 0), maxLength: Math.min(num(s.maxItems, 4), 4) };
      if (constraints.maxLength < constraints.minLength) constraints.maxLength = constraints.minLength;
      return s.uniqueItems ? fc.uniqueArray(item, { ...constraints, selector: (v) => JSON.stringify(v) }) : fc.array(item, constraints);
    }
    case 'object': {
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      const required = new Set((s.required ?? []) as string[]);
      if (Object.keys(properties).length === 0) {
        if (depth > 4 || !s.additionalProperties || s.additionalProperties === true) return fc.constant({});
        return fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/), valueOf(s.additionalProperties as Schema, resolve, depth + 1), { maxKeys: 3 });
      }
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, sub] of Object.entries(properties)) {
        if (depth > 5 && !required.has(name)) continue;
        // read-only fields are never sent
        if (resolve(sub).readOnly === true) continue;
        record[name] = valueOf(sub, resolve, depth + 1);
      }
      return fc.record(record, { requiredKeys: [...required].filter((name) => name in record) });
    }
    default:
      return stringOf(s);
  }
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  const minLength = num(s.minLength, 0);
  const maxLength = Math.min(num(s.maxLength, 40), 300);
  const fits = (v: string) => v.length >= minLength && v.length <= num(s.maxLength, Number.MAX_SAFE_INTEGER);
  switch (s.format) {
    case 'date-time':
      return DATE.map((d) => d.toISOString());
    case 'date':
      return DATE.map((d) => d.toISOString().slice(0, 10));
    case 'uri':
    case 'url':
      return fc.webUrl({ withQueryParameters: false, withFragments: false }).filter(fits);
    case 'email':
      return fc.emailAddress().filter(fits);
    case 'uuid':
      return fc.uuid();
  }
  if (typeof s.pattern === 'string') {
    const pattern = new RegExp(s.pattern as string);
    try {
      return fc.stringMatching(pattern).filter(fits);
    } catch {
      // a pattern fast-check cannot generate from (lookaheads): strings of the length bounds that match it
      return fc.string({ minLength, maxLength }).filter((value) => fits(value) && pattern.test(value));
    }
  }
  // lengths are checked in UTF-16 code units: a grapheme may take several
  return fc.oneof(
    { arbitrary: fc.string({ minLength, maxLength }), weight: 3 },
    { arbitrary: fc.string({ minLength, maxLength, unit: 'grapheme' }).filter(fits), weight: 1 },
  );
}

function num(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** Path segment values: well-formed, ill-formed, and hostile. */
export function hostilePathValue(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent),
    fc.string({ minLength: 1, maxLength: 20, unit: 'grapheme' }).map(encodeURIComponent),
    fc.constantFrom(
      '%00',
      '%',
      '%zz',
      '%E0%A4%A',
      '..',
      '%2e%2e',
      '%2F..%2F..%2Fetc%2Fpasswd',
      'null',
      'undefined',
      '0',
      '-1',
      'NaN',
      '%27%20OR%20%271%27%3D%271',
      '%3Cscript%3E',
      '__proto__',
      'constructor',
      'a'.repeat(5000),
      '%F0%9F%92%A9',
      '%C0%AF',
    ),
    fc.stringMatching(/^[0-9a-f]{24}$/),
  );
}

/** Query values: well-formed for the schema, or anything. */
export function hostileQueryValue(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.string({ maxLength: 10, unit: 'grapheme' }),
    fc.constantFrom('', '-1', '0', '1.5', '1e3', '999999999999999999999', 'true', 'null', '[]', '{}', 'a'.repeat(3000), '%', '%zz', '\u0000'),
  );
}

/** Bodies that are not what the schema wants. */
export function hostileBody(valid: fc.Arbitrary<unknown>, schema: Schema, resolve: (s: Schema | undefined) => Schema): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  const properties = Object.keys((s.properties ?? {}) as object);
  const required = (s.required ?? []) as string[];
  const mutations: Array<fc.Arbitrary<unknown>> = [
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom(null, [], 0, '', 'text', true, { __proto__: { admin: true } }, JSON.parse('{"__proto__":{"admin":true}}'), { constructor: { prototype: { admin: true } } }),
    valid.chain((body) =>
      fc.record({ key: fc.string({ minLength: 1, maxLength: 20 }), value: fc.jsonValue({ maxDepth: 2 }) }).map(({ key, value }) =>
        body && typeof body === 'object' && !Array.isArray(body) ? { ...(body as object), [key]: value } : body,
      ),
    ),
  ];
  if (properties.length > 0) {
    mutations.push(
      valid.chain((body) =>
        fc.record({ key: fc.constantFrom(...properties), value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ minLength: 5000, maxLength: 6000 })) }).map(
          ({ key, value }) => (body && typeof body === 'object' ? { ...(body as object), [key]: value } : body),
        ),
      ),
    );
  }
  if (required.length > 0) {
    mutations.push(
      valid.chain((body) =>
        fc.constantFrom(...required).map((key) => {
          if (!body || typeof body !== 'object') return body;
          const copy = { ...(body as Record<string, unknown>) };
          delete copy[key];
          return copy;
        }),
      ),
    );
  }
  return fc.oneof(...mutations);
}

// ---------------------------------------------------------------- transport

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/** One HTTP request with the path and headers exactly as given (keep-alive). */
export function send(
  base: { host: string; port: number },
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<RawResponse> {
  // an explicit length: Node sends a GET/DELETE body with neither length nor chunking otherwise
  if (body !== undefined) headers = { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: base.host, port: base.port, method, path, headers, agent, timeout: 15_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        recordStatus({ method, path, status: res.statusCode ?? 0 });
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

/** Bytes on a fresh socket, for requests no well-behaved client library would send. */
export function sendRaw(base: { host: string; port: number }, head: Buffer | string, body: Buffer | string = ''): Promise<RawResponse | null> {
  return new Promise((resolve, reject) => {
    const socket = connect(base.port, base.host);
    const chunks: Buffer[] = [];
    socket.setTimeout(15_000, () => socket.destroy(new Error('raw request timed out')));
    socket.on('data', (chunk) => chunks.push(Buffer.from(chunk)));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? resolve(parseRaw(Buffer.concat(chunks))) : reject(error)));
    socket.on('end', () => resolve(parseRaw(Buffer.concat(chunks))));
    socket.write(Buffer.concat([Buffer.isBuffer(head) ? head : Buffer.from(head, 'latin1'), Buffer.isBuffer(body) ? body : Buffer.from(body)]));
  });
}

function parseRaw(data: Buffer): RawResponse | null {
  const text = data.toString('latin1');
  const split = text.indexOf('\r\n\r\n');
  if (split === -1) return null;
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string | string[]> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const existing = headers[name];
    headers[name] = existing === undefined ? value : ([] as string[]).concat(existing, value);
  }
  let body = data.subarray(Buffer.byteLength(text.slice(0, split + 4), 'latin1'));
  if (/chunked/i.test(String(headers['transfer-encoding'] ?? ''))) body = dechunk(body);
  return { status: Number(statusLine.split(' ')[1]), headers, text: body.toString('utf8') };
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset < body.length) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd === -1) break;
    const size = Number.parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!size) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Fills a path template with values by parameter name. */
export function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? 'x');
}
