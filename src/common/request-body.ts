import type { IncomingHttpHeaders } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { ApiError, ErrorCode } from './api-error';

export const MAX_BODY_BYTES = 1024 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;

function tooLarge(): ApiError {
  return new ApiError(ErrorCode.PayloadTooLarge, 'The request body exceeds 1 MiB.');
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
 * stops being read at once.
 */
export function readBody(payload: Readable, headers: IncomingHttpHeaders, limit = MAX_BODY_BYTES): Promise<Buffer> {
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
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (error: unknown) => {
      source.removeAllListeners('data');
      if (source !== payload) payload.unpipe();
      reject(error);
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(tooLarge());
      chunks.push(chunk);
    });
    source.once('error', (error) => fail(source === payload ? error : ApiError.validation({ body: ['is not validly compressed'] }, 'The request body could not be decompressed.')));
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
 * JSON allows, RFC 8259), empty meaning `{}`. Anything else is 422.
 */
export function parseJsonBody(bytes: Buffer, contentType: string): unknown {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType)?.[1].toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') throw unsupportedEncoding();
  const text = bytes.toString('utf8');
  if (text.length === 0) return {};
  const first = /\S/.exec(text)?.[0];
  if (first === '{' || first === '[') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // falls through to the 422 below
    }
  }
  throw ApiError.validation({ body: ['is not valid JSON'] }, 'The request body is not valid JSON.');
}
