import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { ApiError, ErrorCode } from '../common/api-error';
import { inexactNumberPaths } from '../common/exact-json';
import { hasFieldErrors } from '../common/field-errors';
import { bodyShapeProblems } from '../common/validation';

export const MAX_BODY_BYTES = 1024 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;

function tooLarge(): ApiError {
  return new ApiError(ErrorCode.PayloadTooLarge, 'The request body exceeds 1 MiB.');
}

function cutOff(): ApiError {
  return ApiError.validation({ body: ['was not received whole: the connection closed'] }, 'The request body was not received whole.');
}

function unsupportedEncoding(): ApiError {
  return ApiError.validation({ body: ['has an unsupported encoding'] }, 'The request body encoding is not supported.');
}

function decoder(encoding: string): Transform | null {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return null;
  }
}

/**
 * Reads a request body into one buffer, at most `limit` bytes after
 * decompression (gzip, deflate, br). A Content-Length over the limit is
 * refused before a byte is read; a body that grows past it while streaming
 * stops being read at once. `received` hears of each chunk as it arrives,
 * before decompression.
 */
export function readBody(payload: Readable, headers: IncomingHttpHeaders, limit = MAX_BODY_BYTES, received?: (bytes: number) => void): Promise<Buffer> {
  // the client hung up while the request waited before its body (its key's lookup, its tenant's
  // slots): the stream's error is gone already, and no 'end' or 'error' would ever come
  if (payload.destroyed) return Promise.reject(cutOff());
  const encoding = String(headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  let source: Readable = payload;
  if (encoding !== 'identity') {
    const inflate = decoder(encoding);
    if (!inflate) return Promise.reject(unsupportedEncoding());
    payload.pipe(inflate);
    payload.once('error', (error) => inflate.destroy(error));
    source = inflate;
  } else if (Number(headers['content-length']) > limit) {
    return Promise.reject(tooLarge());
  }
  if (received) payload.on('data', (chunk: Buffer) => received(chunk.length));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (error: unknown) => {
      source.removeAllListeners('data');
      // a decompressor stops inflating what it was already given (a small bomb grows on its own)
      if (source !== payload) {
        payload.unpipe();
        source.destroy();
      }
      reject(error);
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(tooLarge());
      chunks.push(chunk);
    });
    // the payload fails when the client resets or closes the connection (or the request
    // timeout cuts it): a request that never arrived whole, not a fault of the server's
    source.once('error', () => fail(source === payload ? cutOff() : ApiError.validation({ body: ['is not validly compressed'] }, 'The request body could not be decompressed.')));
    source.once('end', () => resolve(Buffer.concat(chunks, size)));
  });
}

/** Is this Content-Type a JSON media type (`application/json`, `application/*+json`)? */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  return JSON_TYPE.test(contentType.split(';', 1)[0].trim().toLowerCase());
}

/**
 * A JSON body: an object or array at the top level, UTF-8 (the only charset
 * JSON allows, RFC 8259), empty meaning `{}`, every number one that can be
 * kept exactly (exact-json.ts). Anything else is 422.
 */
export function parseJsonBody(bytes: Buffer, contentType: string): unknown {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)?.[1].toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') throw unsupportedEncoding();
  const text = decodeUtf8KeepingInvalidBytes(bytes);
  if (text.length === 0) return {};
  const first = /\S/.exec(text)?.[0];
  let parsed: unknown;
  if (first === '{' || first === '[') {
    try {
      parsed = JSON.parse(text) as unknown;
    } catch {
      // falls through to the 422 below
    }
  }
  if (parsed === undefined) throw ApiError.validation({ body: ['is not valid JSON'] }, 'The request body is not valid JSON.');
  // before the exact-number trace and class-transformer, whose work grows with depth and keys per object
  const shape = bodyShapeProblems(parsed);
  if (shape) throw ApiError.validation(shape);
  // a number JavaScript would round, overflow or sign-flip is refused by name, never stored changed
  const inexact = inexactNumberPaths(text);
  if (hasFieldErrors(inexact)) throw ApiError.validation(inexact, 'The request body holds a number that cannot be stored exactly.');
  return parsed;
}

/** Length of the well-formed UTF-8 sequence at `i` (RFC 3629 §4), or 0 when the byte there starts none. */
function utf8SequenceLength(bytes: Buffer, i: number): number {
  const b0 = bytes[i];
  if (b0 < 0x80) return 1;
  const cont = (at: number, low = 0x80, high = 0xbf) => at < bytes.length && bytes[at] >= low && bytes[at] <= high;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const [low, high] = b0 === 0xe0 ? [0xa0, 0xbf] : b0 === 0xed ? [0x80, 0x9f] : [0x80, 0xbf];
    return cont(i + 1, low, high) && cont(i + 2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const [low, high] = b0 === 0xf0 ? [0x90, 0xbf] : b0 === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
    return cont(i + 1, low, high) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

/**
 * Text with each byte that is not valid UTF-8 kept as an unpaired surrogate
 * (U+DC80–U+DCFF, as Python's "surrogateescape" does) instead of U+FFFD: the
 * body still parses, and the validation pipe's text walk names the field
 * that holds it (422) rather than storing a replacement character.
 */
export function decodeUtf8KeepingInvalidBytes(bytes: Buffer): string {
  return isUtf8(bytes) ? bytes.toString('utf8') : decodeKeepingInvalidBytes(bytes);
}

function decodeKeepingInvalidBytes(bytes: Buffer): string {
  let text = '';
  let runStart = 0;
  for (let i = 0; i < bytes.length; ) {
    const length = utf8SequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    text += bytes.toString('utf8', runStart, i) + String.fromCharCode(0xdc00 | bytes[i]);
    runStart = ++i;
  }
  return text + bytes.toString('utf8', runStart);
}
