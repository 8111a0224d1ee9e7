import { ApiError, ErrorCode, type FieldErrors } from '../common/api-error';
import { addFieldError, hasFieldErrors, mergeFieldErrors, refused, type Checked } from '../common/field-errors';
import { BOUNDS } from '../common/input-bounds';
import { outboundUrlProblem } from '../../libs/url-policy/url-policy';
import { MAX_BODY_DEPTH, nestingDepth } from '../common/validation';

/**
 * A source's `config`: "type-specific; additional keys allowed". The keys
 * this service documents keep their types and rules (`url` passes the
 * outbound-URL rule; `max_pages` and `crawl` are read for a website only);
 * any other key is the client's, stored exactly as sent (`__proto__`
 * refused, by the validation pipe and the fixture loader) and never read,
 * returned or logged — within the size and nesting bounds below. `crawl` is
 * this service's own object: its keys are the documented ones only, and its
 * path patterns are paths, never URLs, so the outbound-URL rule cannot be
 * walked around. The API and the fixture loader both judge with
 * `sourceConfigProblems`; `path` prefixes field names.
 */

export const MAX_PAGES = 1_000_000;
export const MAX_CRAWL_DEPTH = 100;
/** As many patterns as the size bound lets through when they are short (`/a/*` is 6 bytes as JSON). */
export const MAX_PATTERNS = 50_000;
/** `config` sits one level inside a request body, which nests at most MAX_BODY_DEPTH levels: the fixture loader holds it to the same. */
export const MAX_CONFIG_DEPTH = MAX_BODY_DEPTH - 1;
/**
 * A path pattern is a path: never a scheme (`http:`, `javascript:`) or a
 * leading `//`, and no whitespace, control character or backslash (a URL
 * parser drops or rewrites them, turning ` //host` or `\\host` into a host):
 * a pattern is matched against paths of `url`'s site, and a URL in its place
 * would name another host.
 */
export const PATH_PATTERN = '^(?![A-Za-z][A-Za-z0-9+.-]*:)(?!//)[^\\u0000-\\u0020\\u007f\\\\]+$';
const PATH_PATTERN_REGEXP = new RegExp(PATH_PATTERN);

type Rule = (value: unknown) => string | null;
/** A key's rule, or the shape of a nested object. */
interface Shape {
  [key: string]: Rule | Shape;
}

const outboundUrl: Rule = (value) => (typeof value !== 'string' ? 'must be a string' : outboundUrlProblem(value));
const boolean: Rule = (value) => (typeof value === 'boolean' ? null : 'must be a boolean');
const integer =
  (min: number, max: number): Rule =>
  (value) =>
    Number.isInteger(value) && (value as number) >= min && (value as number) <= max ? null : `must be an integer from ${min} to ${max}`;
const isPathPattern = (item: unknown): boolean => typeof item === 'string' && item.length >= 1 && item.length <= BOUNDS.url && PATH_PATTERN_REGEXP.test(item);
const patterns: Rule = (value) =>
  Array.isArray(value) && value.length <= MAX_PATTERNS && value.every(isPathPattern)
    ? null
    : `must be an array of at most ${MAX_PATTERNS} path patterns: 1 to ${BOUNDS.url} characters, no whitespace or backslash, not a URL (no scheme, no leading //)`;

/** The crawl options of a website: which paths to follow, and how far. Only these keys. */
const CRAWL: Shape = { include: patterns, exclude: patterns, max_depth: integer(0, MAX_CRAWL_DEPTH) };

/** The documented keys of website and webpage sources; `url` is required. */
const DOCUMENTED: Shape = { url: outboundUrl, indexed: boolean, max_pages: integer(1, MAX_PAGES), crawl: CRAWL };

/**
 * Per source type, the keys its `config` takes and whether others are kept.
 * upload and connector sources are created by the platform (fixtures only): nothing to configure.
 */
const SOURCE_CONFIG_SHAPES: Record<string, { shape: Shape; additionalKeys: boolean }> = {
  website: { shape: DOCUMENTED, additionalKeys: true },
  webpage: { shape: DOCUMENTED, additionalKeys: true },
  upload: { shape: {}, additionalKeys: false },
  connector: { shape: {}, additionalKeys: false },
};

/** The accepted keys in words, for the OpenAPI description of `config` (built from the shapes above). */
export const SOURCE_CONFIG_RULES =
  'Additional keys are allowed and stored exactly as sent (never returned); `__proto__` is refused. ' +
  'The keys this service documents keep their types: `url` (required), `indexed`, and for a `website` `max_pages` (integer 1 to ' +
  `${MAX_PAGES.toLocaleString('en-US')}) and \`crawl\` (only \`include\` and \`exclude\`, arrays of at most ${MAX_PATTERNS} path patterns of at most ${BOUNDS.url} characters, ` +
  `which are paths, not URLs: no scheme and no leading \`//\`; and \`max_depth\`, integer 0 to ${MAX_CRAWL_DEPTH}); a \`webpage\` does not read \`max_pages\` or \`crawl\`, which keep their types there too. ` +
  '`config` is stored in clear: it is not a place for secrets. ' +
  `At most ${BOUNDS.sourceConfigBytes} bytes as JSON (256 KiB), nested at most ${MAX_CONFIG_DEPTH} levels.`;

function checkShape(value: unknown, shape: Shape, additionalKeys: boolean, type: string, path: string, fields: FieldErrors): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    addFieldError(fields, path, 'must be an object');
    return;
  }
  const accepted = Object.keys(shape);
  for (const [key, item] of Object.entries(value)) {
    const at = `${path}.${key}`;
    const rule = Object.prototype.hasOwnProperty.call(shape, key) ? shape[key] : undefined;
    if (rule === undefined) {
      if (!additionalKeys) addFieldError(fields, at, `property ${key} should not exist: ${accepted.length ? `the keys here are ${accepted.join(', ')}` : `a ${type} source takes no config`}`);
    } else if (typeof rule === 'function') {
      const problem = rule(item);
      if (problem) addFieldError(fields, at, problem);
    } else {
      // a documented nested object (crawl) takes its documented keys only
      checkShape(item, rule, false, type, at, fields);
    }
  }
}

/**
 * The stored `config` of a source, or every problem of it by field:
 * `indexed` defaults to false for website and webpage sources; other types
 * store what was given (nothing). `requireUrl` false: the fixture's Source
 * shape, a stored source whose URL is not shipped with it. Bounded before
 * any walk: the size by one serialization, the depth by a walk that stops
 * past the bound.
 */
export function buildSourceConfig(type: string, config: Record<string, unknown> | undefined, path = 'config', options: { requireUrl?: boolean } = {}): Checked<Record<string, unknown>> {
  const fields = sourceConfigProblems(type, config, path, options);
  if (hasFieldErrors(fields)) return refused(fields);
  return { ok: true, value: type === 'website' || type === 'webpage' ? { ...config, indexed: config?.indexed ?? false } : { ...config } };
}

function sourceConfigProblems(type: string, config: Record<string, unknown> | undefined, path: string, options: { requireUrl?: boolean }): FieldErrors {
  const { shape, additionalKeys } = SOURCE_CONFIG_SHAPES[type] ?? { shape: {}, additionalKeys: false };
  const takesUrl = 'url' in shape;
  const requireUrl = takesUrl && (options.requireUrl ?? true);
  if (config === undefined) return requireUrl ? { [`${path}.url`]: ['is required for website and webpage sources'] } : {};
  if (Buffer.byteLength(JSON.stringify(config)) > BOUNDS.sourceConfigBytes) return { [path]: [`must be at most ${BOUNDS.sourceConfigBytes} bytes as JSON`] };
  if (nestingDepth(config, MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH) return { [path]: [`must be nested at most ${MAX_CONFIG_DEPTH} levels deep`] };
  const fields: FieldErrors = {};
  checkShape(config, shape, additionalKeys, type, path, fields);
  if (takesUrl && (config.url === null || (config.url === undefined && requireUrl))) addFieldError(fields, `${path}.url`, 'is required for website and webpage sources');
  return fields;
}

/** `upload` answers 409 and `connector` 422 whatever else the body holds (the body's precheck, and `buildNewSource` again). */
export function checkCreatableType(body: { type?: unknown }): Checked<void> {
  if (body.type === 'upload') {
    const message = 'The upload source is a per-organization singleton that already exists.';
    return refused({ type: ['the upload source is a per-organization singleton that already exists'] }, new ApiError(ErrorCode.Conflict, message, { field: 'type' }));
  }
  if (body.type === 'connector') return refused({ type: ['connector sources are created when the connector integration is added; use website or webpage'] });
  return { ok: true, value: undefined };
}

/** What POST /sources stores from its body. */
export interface NewSource {
  type: 'website' | 'webpage';
  name: string;
  config: Record<string, unknown>;
}

/**
 * A POST /sources body judged whole: the type a client may create, then
 * `name` and `config` together (one 422 naming both).
 */
export function buildNewSource(input: { type: string; name?: string; config?: Record<string, unknown> }): Checked<NewSource> {
  const creatable = checkCreatableType(input);
  if (!creatable.ok) return creatable;
  const type = input.type;
  if (type !== 'website' && type !== 'webpage') return refused({ type: ['must be website or webpage'] });
  const fields: FieldErrors = {};
  if (input.name === undefined) addFieldError(fields, 'name', 'is required');
  const config = buildSourceConfig(type, input.config);
  if (!config.ok) mergeFieldErrors(fields, config.fields);
  if (!config.ok || input.name === undefined || hasFieldErrors(fields)) return refused(fields);
  return { ok: true, value: { type, name: input.name, config: config.value } };
}
