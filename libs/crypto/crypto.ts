import { createCipheriv, createDecipheriv, createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

export function sha256Hex(input: string | Buffer): string {
  return hash('sha256', input, 'hex');
}

export function hmacSha256(secret: string | Buffer, input: string | Buffer): Buffer {
  return createHmac('sha256', secret).update(input).digest();
}

/** Constant-time comparison that does not leak length through an early return. */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const left = Buffer.isBuffer(a) ? a : Buffer.from(a);
  const right = Buffer.isBuffer(b) ? b : Buffer.from(b);
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

/** URL-safe random string of `length` characters from [A-Za-z0-9_-]. */
export function randomUrlSafe(length: number): string {
  return randomBytes(Math.ceil((length * 3) / 4) + 1).toString('base64url').slice(0, length);
}

/** A fresh 256-bit key, base64-encoded, for config files. */
export function newSecretKey(): string {
  return randomBytes(32).toString('base64');
}

/** Parses a 32-byte key given as base64 (44 chars) or hex (64 chars). */
export function parseKey32(value: string): Buffer | null {
  const trimmed = value.trim();
  if (/^[a-fA-F0-9]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  const buf = Buffer.from(trimmed, 'base64');
  return buf.length === 32 && /^[A-Za-z0-9+/=_-]+$/.test(trimmed) ? buf : null;
}

const GCM_VERSION = 'v1';

/**
 * AES-256-GCM envelope: `v1.<iv>.<tag>.<ciphertext>`, each part base64url.
 * `aad` binds the ciphertext to its owner (e.g. the row id), so a ciphertext
 * copied onto another row fails to decrypt.
 */
export function encryptJson(key: Buffer, value: unknown, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [GCM_VERSION, iv.toString('base64url'), tag.toString('base64url'), ciphertext.toString('base64url')].join('.');
}

export function decryptJson<T = unknown>(key: Buffer, envelope: string, aad: string): T {
  const [version, iv, tag, ciphertext] = envelope.split('.');
  if (version !== GCM_VERSION || !iv || !tag || ciphertext === undefined) {
    throw new Error('unrecognized ciphertext envelope');
  }
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
  return JSON.parse(plain.toString('utf8')) as T;
}
