import { CallHandler, ExecutionContext, Injectable, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { map, type Observable } from 'rxjs';
import { requestContext } from './request-context';

/** A page of a list endpoint: rendered as `data: items` plus `meta.next_cursor`. */
export class Page<T> {
  constructor(
    readonly items: T[],
    readonly nextCursor: string | null,
  ) {}

  map<U>(fn: (item: T) => U): Page<U> {
    return new Page(this.items.map(fn), this.nextCursor);
  }
}

/**
 * A single resource that carries a paginated part (the daily series of agent
 * analytics): rendered as `data: resource` plus `meta.next_cursor`.
 */
export class PagedResource<T> {
  constructor(
    readonly resource: T,
    readonly nextCursor: string | null,
  ) {}
}

interface SuccessEnvelope<T> {
  data: T;
  meta: { request_id: string; next_cursor?: string | null };
}

const RAW_RESPONSE = 'raw-response';
/** The handler's return value is the whole body (only `GET /openapi.json`). */
export const RawResponse = () => SetMetadata(RAW_RESPONSE, true);

function envelope<T>(result: T | Page<T> | PagedResource<T>, requestId: string): SuccessEnvelope<T | T[]> {
  if (result instanceof Page) {
    return { data: result.items, meta: { request_id: requestId, next_cursor: result.nextCursor } };
  }
  if (result instanceof PagedResource) {
    return { data: result.resource, meta: { request_id: requestId, next_cursor: result.nextCursor } };
  }
  return { data: result, meta: { request_id: requestId } };
}

/**
 * Wraps what a controller returns in the success envelope. It does not guess:
 * a `Page` is a list, anything else is the single resource.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  /** handler → whether it answers its body raw (metadata never changes once the app runs) */
  private readonly raw = new WeakMap<object, boolean>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const handler = context.getHandler();
    let raw = this.raw.get(handler);
    if (raw === undefined) this.raw.set(handler, (raw = this.reflector.get<boolean>(RAW_RESPONSE, handler) === true));
    if (raw) return next.handle();
    const { requestId } = requestContext();
    return next.handle().pipe(map((result: unknown) => envelope(result, requestId)));
  }
}
