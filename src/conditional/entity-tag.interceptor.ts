import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { map, type Observable } from 'rxjs';
import { entityTagOf, ifNoneMatchMatches } from '../../libs/entity-tags/entity-tags';
import type { HttpRequest } from '../common/request-context';
import { TAGGED_REPRESENTATION } from '../common/openapi';

export const ETAG_HEADER = 'ETag';
/** Methods whose answer is the resource's representation (a DELETE's is an acknowledgement). */
const TAGGED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PATCH']);

interface Envelope {
  data: unknown;
}

function isEnvelope(body: unknown): body is Envelope {
  return typeof body === 'object' && body !== null && 'data' in body;
}

/**
 * The `ETag` of every answer that carries one resource, and the 304 of a
 * `GET` whose `If-None-Match` names it (RFC 9110). Registered outermost, so
 * it tags what is sent, an idempotent replay included: a replay's stored body
 * is the first answer's text, so it carries the first answer's tag.
 */
@Injectable()
export class EntityTagInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** handler → whether it answers one resource (metadata never changes once the app runs) */
  private readonly tagged = new WeakMap<object, boolean>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const handler = context.getHandler();
    let tagged = this.tagged.get(handler);
    if (tagged === undefined) this.tagged.set(handler, (tagged = this.reflector.get<boolean>(TAGGED_REPRESENTATION, handler) === true));
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequest>();
    const method = (request.method ?? 'GET').toUpperCase();
    if (!tagged || !TAGGED_METHODS.has(method)) return next.handle();
    const response = http.getResponse<unknown>();
    return next.handle().pipe(
      map((body: unknown) => {
        if (!isEnvelope(body)) return body;
        const tag = entityTagOf(body.data);
        this.adapterHost.httpAdapter.setHeader(response, ETAG_HEADER, tag);
        const ifNoneMatch = request.headers['if-none-match'];
        if ((method === 'GET' || method === 'HEAD') && ifNoneMatch !== undefined && ifNoneMatchMatches(ifNoneMatch, tag)) {
          // Nest sends a returned Response as it is: its status wins over the route's 200, the headers set so far stay
          return new Response(null, { status: 304, headers: { [ETAG_HEADER]: tag } });
        }
        return body;
      }),
    );
  }
}
