import { hash } from 'node:crypto';

/**
 * Entity tags (RFC 9110, section 8.8.3) and the two preconditions built on
 * them: `If-Match` (section 13.1.1, strong comparison) and `If-None-Match`
 * (section 13.1.2, weak comparison). Framework-free; the work is linear in
 * the header's length (Node bounds all headers to 16 KiB).
 */

/**
 * The strong entity tag of a representation: SHA-256 of its JSON text, so it
 * changes whenever the representation changes, and only then. Quoted, as it
 * goes into the `ETag` header.
 */
export function entityTagOf(representation: unknown): string {
  return `"${hash('sha256', JSON.stringify(representation) ?? '', 'base64url')}"`;
}

interface EntityTag {
  weak: boolean;
  /** with its quotes */
  opaque: string;
}

/** `*`, or the entity tags of a comma-separated list; null when the value is not one. */
function parseCondition(header: string | string[] | undefined): '*' | EntityTag[] | null {
  if (header === undefined) return null;
  const value = (Array.isArray(header) ? header.join(',') : header).trim();
  if (value === '*') return '*';
  const tags: EntityTag[] = [];
  // etagc = %x21 / %x23-7E / obs-text; list elements are separated by commas and optional whitespace
  const element = /[\t ]*(?:(W\/)?("[\x21\x23-\x7e\x80-\xff]*"))?[\t ]*(,|$)/y;
  while (element.lastIndex < value.length) {
    const start = element.lastIndex;
    const match = element.exec(value);
    if (!match || element.lastIndex === start) return [];
    if (match[2] !== undefined) tags.push({ weak: match[1] !== undefined, opaque: match[2] });
    if (match[3] === '') break;
  }
  return tags;
}

/**
 * Whether `If-Match` lets a request change the resource whose current tag is
 * `current` (null: no current representation). `*` holds for any current
 * representation; a list holds when one of its tags is strongly equal to
 * the current one (a weak tag never is). A value that is not a list of
 * entity tags matches nothing, so a malformed header never lets a write
 * through.
 */
export function ifMatchHolds(header: string | string[], current: string | null): boolean {
  const condition = parseCondition(header);
  if (current === null) return false;
  if (condition === '*') return true;
  return (condition ?? []).some((tag) => !tag.weak && tag.opaque === current);
}

/**
 * Whether `If-None-Match` says the client's copy is the current one, i.e. a
 * GET may answer 304: `*`, or a tag weakly equal to the current one.
 */
export function ifNoneMatchMatches(header: string | string[], current: string): boolean {
  const condition = parseCondition(header);
  if (condition === '*') return true;
  return (condition ?? []).some((tag) => tag.opaque === current);
}
