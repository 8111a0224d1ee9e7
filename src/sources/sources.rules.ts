import type { FieldErrors } from '../common/api-error';
import { BOUNDS } from '../common/input-bounds';
import { outboundUrlProblem } from '../common/url-policy';

/**
 * A source's `config`, typed per source type: only the keys a type documents
 * are accepted (any other is an unknown field, 422), every URL-valued key
 * passes the outbound-URL rule, and no key holds a secret — `config` is
 * stored in clear, so a key that needed one would have to be encrypted like
 * custom-tool credentials; no type needs one today. The API and the fixture
 * loader both judge with `sourceConfigProblems`; `path` prefixes field names.
 */

export const MAX_CONFIG_BYTES = BOUNDS.sourceConfigBytes;
export const MAX_PAGES = 1_000_000;
export const MAX_CRAWL_DEPTH = 100;
export const MAX_PATTERN_LENGTH = BOUNDS.url;
/** As many patterns as the size bound lets through when they are short (`/a/*` is 6 bytes as JSON). */
export const MAX_PATTERNS = 50_000;

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
const patterns: Rule = (value) =>
  Array.isArray(value) && value.length <= MAX_PATTERNS && value.every((item) => typeof item === 'string' && item.length >= 1 && item.length <= MAX_PATTERN_LENGTH)
    ? null
    : `must be an array of at most ${MAX_PATTERNS} path patterns: strings of 1 to ${MAX_PATTERN_LENGTH} characters`;

/** The crawl options of a website: which paths to follow, and how far. */
const CRAWL: Shape = { include: patterns, exclude: patterns, max_depth: integer(0, MAX_CRAWL_DEPTH) };

/** Per source type, the keys its `config` takes; `url` is required where it is listed. */
export const SOURCE_CONFIG_SHAPES: Record<string, Shape> = {
  website: { url: outboundUrl, indexed: boolean, max_pages: integer(1, MAX_PAGES), crawl: CRAWL },
  webpage: { url: outboundUrl, indexed: boolean },
  // created by the platform (the upload singleton, connector integrations): nothing to configure
  upload: {},
  connector: {},
};

/** The accepted keys in words, for the OpenAPI description of `config` (built from the shapes above). */
export const SOURCE_CONFIG_RULES =
  'Only the keys of the source type are accepted; any other is an unknown field (422). ' +
  '`website`: `url` (required), `indexed`, `max_pages` (integer 1 to ' +
  `${MAX_PAGES.toLocaleString('en-US')}), \`crawl\` (an object of \`include\` and \`exclude\`, arrays of at most ${MAX_PATTERNS} path patterns of at most ${MAX_PATTERN_LENGTH} characters, and \`max_depth\`, integer 0 to ${MAX_CRAWL_DEPTH}). ` +
  '`webpage`: `url` (required), `indexed`. No key takes credentials, headers or a proxy: `config` is not a place for secrets. ' +
  `At most ${MAX_CONFIG_BYTES} bytes as JSON (256 KiB): room for include/exclude lists of thousands of paths.`;

function checkShape(value: unknown, shape: Shape, type: string, path: string, fields: FieldErrors): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fields[path] = ['must be an object'];
    return;
  }
  const accepted = Object.keys(shape);
  for (const [key, item] of Object.entries(value)) {
    const at = `${path}.${key}`;
    const rule = Object.prototype.hasOwnProperty.call(shape, key) ? shape[key] : undefined;
    if (rule === undefined) {
      Object.defineProperty(fields, at, {
        value: [`property ${key} should not exist: ${accepted.length ? `the keys here are ${accepted.join(', ')}` : `a ${type} source takes no config`}`],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else if (typeof rule === 'function') {
      const problem = rule(item);
      if (problem) fields[at] = [problem];
    } else {
      checkShape(item, rule, type, at, fields);
    }
  }
}

/**
 * Every problem of a source's `config`, by field. `requireUrl` false: the
 * fixture's Source shape, a stored source whose URL is not shipped with it.
 */
export function sourceConfigProblems(type: string, config: Record<string, unknown> | undefined, path = 'config', options: { requireUrl?: boolean } = {}): FieldErrors {
  const shape = SOURCE_CONFIG_SHAPES[type] ?? {};
  const takesUrl = 'url' in shape;
  const requireUrl = takesUrl && (options.requireUrl ?? true);
  if (config === undefined) return requireUrl ? { [`${path}.url`]: ['is required for website and webpage sources'] } : {};
  if (Buffer.byteLength(JSON.stringify(config)) > MAX_CONFIG_BYTES) return { [path]: [`must be at most ${MAX_CONFIG_BYTES} bytes as JSON`] };
  const fields: FieldErrors = {};
  checkShape(config, shape, type, path, fields);
  if (takesUrl && (config.url === null || (config.url === undefined && requireUrl))) fields[`${path}.url`] = ['is required for website and webpage sources'];
  return fields;
}

/** The stored `config` of a website or webpage source: `indexed` defaults to false; other types store what was given (nothing). */
export function sourceConfigRow(type: string, config: Record<string, unknown> | undefined): Record<string, unknown> {
  return type === 'website' || type === 'webpage' ? { ...config, indexed: config?.indexed ?? false } : { ...config };
}
