import { randomBytes } from 'node:crypto';

/**
 * Resource identifiers: `<prefix>_<24 lowercase hex>`, laid out like a MongoDB
 * ObjectId (4-byte big-endian seconds timestamp, 5 random bytes fixed per
 * process, 3-byte counter), so that sorting ids sorts by creation time and the
 * ids stay compatible with the 24-hex form clients already hold.
 */
const SHARED_ID_PREFIXES = {
  org: 'org',
  key: 'key',
  member: 'member',
  user: 'user',
  agent: 'agent',
  conversation: 'conv',
  message: 'msg',
  connector: 'connector',
  customTool: 'tool',
  source: 'source',
  document: 'doc',
} as const;

/**
 * Kind → prefix. The kinds above are those several folders use; a kind only
 * its module uses is declared in that module's folder, where it adds itself
 * to this interface (module augmentation) and calls `declareIdKind`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the one body modules merge into
export interface IdPrefixes extends Readonly<typeof SHARED_ID_PREFIXES> {}

export type IdKind = keyof IdPrefixes;

const prefixes = new Map<string, string>(Object.entries(SHARED_ID_PREFIXES));

/**
 * Declares a module's id kind and returns it, for the module's files to pass
 * to the functions below: importing the constant is what guarantees the
 * declaration ran before an id of the kind is made, parsed or documented.
 * Throws on a prefix that is not lowercase letters (an id is split at its
 * first `_`) or that another kind has.
 */
export function declareIdKind<K extends IdKind>(kind: K, prefix: IdPrefixes[K]): K {
  if (!/^[a-z]+$/.test(prefix)) throw new Error(`id kind ${kind}: '${prefix}' must be lowercase letters a-z only (an id is <prefix>_<24 hex>, split at its first "_")`);
  const other = [...prefixes].find(([known, taken]) => taken === prefix && known !== kind);
  if (other) throw new Error(`id kind ${kind}: prefix '${prefix}' is already id kind ${other[0]}'s`);
  const declared = prefixes.get(kind);
  if (declared !== undefined && declared !== prefix) throw new Error(`id kind ${kind} is declared twice, as '${declared}' and '${prefix}'`);
  prefixes.set(kind, prefix);
  return kind;
}

/** Every kind declared so far (the shared ones, and those of the modules loaded), with its prefix. */
export function idKinds(): ReadonlyMap<IdKind, string> {
  return prefixes as ReadonlyMap<IdKind, string>;
}

export function idPrefix(kind: IdKind): string {
  const prefix = prefixes.get(kind);
  if (prefix === undefined) throw new Error(`id kind ${kind} is not declared: pass the constant its module's declareIdKind returned`);
  return prefix;
}

const HEX24 = /^[a-f0-9]{24}$/;
const processRandom = randomBytes(5);
let counter = randomBytes(3).readUIntBE(0, 3);

/** 24 lowercase hex characters; `at` fixes the timestamp part (fixtures, tests). */
export function newObjectIdHex(at: Date = new Date()): string {
  const buf = Buffer.alloc(12);
  buf.writeUInt32BE(Math.floor(at.getTime() / 1000) >>> 0, 0);
  processRandom.copy(buf, 4);
  counter = (counter + 1) % 0xffffff;
  buf.writeUIntBE(counter, 9, 3);
  return buf.toString('hex');
}

export function newId(kind: IdKind, at?: Date): string {
  return `${idPrefix(kind)}_${newObjectIdHex(at)}`;
}

/** True when `value` is exactly `<prefix>_<24 hex>` for this kind. */
export function isId(kind: IdKind, value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const prefix = `${idPrefix(kind)}_`;
  return value.startsWith(prefix) && HEX24.test(value.slice(prefix.length));
}

/**
 * Normalizes a path id to its canonical prefixed form, or returns null when
 * it is not an id of this kind. `allowBare` accepts the 24-hex form the contract
 * allows for agents, conversations and connectors.
 */
export function parseId(kind: IdKind, value: unknown, options: { allowBare?: boolean } = {}): string | null {
  if (typeof value !== 'string') return null;
  if (isId(kind, value)) return value;
  if (options.allowBare && HEX24.test(value)) return `${idPrefix(kind)}_${value}`;
  return null;
}

/**
 * The smallest id of this kind whose timestamp is `seconds` (Unix): every id
 * created at or after that second sorts at or above it, every earlier one
 * below. For keyset bounds by creation time.
 */
export function smallestIdAt(kind: IdKind, seconds: number): string {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > 0xffffffff) throw new RangeError('seconds out of the id range');
  return `${idPrefix(kind)}_${seconds.toString(16).padStart(8, '0')}${'0'.repeat(16)}`;
}

/** Seconds timestamp encoded in an id (prefixed or bare). */
export function idTimestamp(id: string): Date {
  const hex = id.slice(id.length - 24);
  return new Date(parseInt(hex.slice(0, 8), 16) * 1000);
}
