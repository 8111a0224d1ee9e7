import { createHash } from 'node:crypto';
import { constantTimeEqual, hmacSha256 } from '../crypto/crypto';

/**
 * Opaque, tamper-evident pagination cursors: `<payload>.<mac>`, both
 * base64url. The payload carries the last id seen and a short hash of the
 * filters that produced the page, so a cursor replayed with other filters is
 * rejected instead of silently skipping or repeating items.
 */
export interface CursorPayload {
  /** last id of the page the cursor continues after */
  lastId: string;
  /** filter fingerprint, see `filterHash` */
  filterHash: string;
}

const MAC_BYTES = 16;
const MAX_CURSOR_LENGTH = 512;

/** Stable hash of a filter object: keys sorted, undefined values dropped. */
export function filterHash(filters: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(filters)).digest('base64url').slice(0, 16);
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export class CursorCodec {
  constructor(private readonly secret: string | Buffer) {
    if (!secret || secret.length < 16) throw new Error('cursor secret must be at least 16 bytes');
  }

  encode(payload: CursorPayload): string {
    const body = Buffer.from(JSON.stringify({ i: payload.lastId, f: payload.filterHash })).toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  /** Returns null for anything that is not a cursor this server issued. */
  decode(cursor: string): CursorPayload | null {
    if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH) return null;
    const dot = cursor.indexOf('.');
    if (dot <= 0 || dot !== cursor.lastIndexOf('.')) return null;
    const body = cursor.slice(0, dot);
    const mac = cursor.slice(dot + 1);
    if (!constantTimeEqual(mac, this.mac(body))) return null;
    try {
      const parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { i?: unknown; f?: unknown };
      if (typeof parsed.i !== 'string' || typeof parsed.f !== 'string') return null;
      return { lastId: parsed.i, filterHash: parsed.f };
    } catch {
      return null;
    }
  }

  private mac(body: string): string {
    return hmacSha256(this.secret, body).subarray(0, MAC_BYTES).toString('base64url');
  }
}
