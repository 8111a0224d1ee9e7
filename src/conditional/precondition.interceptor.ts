import { CallHandler, ExecutionContext, Injectable, NestInterceptor, type Type } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import { from, lastValueFrom, type Observable } from 'rxjs';
import { entityTagOf, ifMatchHolds } from '../../libs/entity-tags/entity-tags';
import { ApiError, ErrorCode } from '../common/api-error';
import { requestContext, type HttpRequest } from '../common/request-context';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { DatabaseTransactions } from '../database/transactions';
import { CURRENT_REPRESENTATION, type LockedRepresentation } from './conditional.decorators';

const CONDITIONAL_METHODS: ReadonlySet<string> = new Set(['PATCH', 'DELETE']);

/**
 * `If-Match` on PATCH and DELETE (RFC 9110): the write runs only while the
 * resource is still the representation the client names. The check and the
 * write are one transaction, and the check locks the row, so of two writes
 * sent with the same tag exactly one passes; the other sees the new tag and
 * is answered 412 `precondition_failed` with nothing changed. Registered
 * inside the idempotency interceptor: a retry of a committed write is
 * replayed before its (now stale) precondition is looked at, and a keyed
 * write's transaction is this one. Requests without `If-Match` pass as they
 * are.
 */
@Injectable()
export class PreconditionInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly moduleRef: ModuleRef,
    private readonly txHost: TransactionHost<DatabaseTransactions>,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<HttpRequest>();
    const ifMatch = request.headers['if-match'];
    const { auth } = requestContext();
    if (ifMatch === undefined || !auth || !CONDITIONAL_METHODS.has((request.method ?? '').toUpperCase())) return next.handle();
    const source = this.sourceOf(context);
    const orgId = auth.orgId;
    const id = request.params?.id ?? '';
    return from(
      this.txHost.withTransaction(async () => {
        const current = await source.lockedRepresentation(orgId, id);
        // no such resource: the route's own answer (404) says so, as without the header
        if (current !== null && !ifMatchHolds(ifMatch, entityTagOf(current))) throw preconditionFailed();
        return lastValueFrom(next.handle(), { defaultValue: undefined });
      }),
    );
  }

  private sourceOf(context: ExecutionContext): LockedRepresentation {
    const type = this.reflector.getAllAndOverride<Type<LockedRepresentation> | undefined>(CURRENT_REPRESENTATION, [context.getHandler(), context.getClass()]);
    // a route without a declared source cannot check the header: refusing is safer than ignoring it
    if (!type) throw new Error(`${context.getClass().name}.${context.getHandler().name} takes If-Match but declares no @ConditionalWrites(...)`);
    return this.moduleRef.get(type, { strict: false });
  }
}

function preconditionFailed(): ApiError {
  return new ApiError(
    ErrorCode.PreconditionFailed,
    'The resource has changed since it was read: If-Match names none of its current entity tags. Nothing was changed; read it again (GET) and retry with its new ETag.',
  );
}
