import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config/config';
import type { RequestContext } from '../common/request-context';
import { runInScope, type DatabaseScope } from './request-scope';

/**
 * What a request's database work may take in all: the statement timeout plus
 * this margin, so that the whole request — pool wait, every statement, the
 * rollback — ends within the statement timeout plus one second whatever the
 * database does (docs/decisions.md, "Timeouts").
 */
export const REQUEST_DATABASE_MARGIN_MS = 500;

/**
 * The database scope of a request: its deadline counts from the request's
 * arrival, so the key lookup of the authentication step (before the
 * interceptors) and the handler share one budget.
 */
export function requestDatabaseScope(request: RequestContext, config: Pick<AppConfig, 'dbStatementTimeoutMs'>): DatabaseScope {
  return { deadline: (request.receivedAt ?? Date.now()) + config.dbStatementTimeoutMs + REQUEST_DATABASE_MARGIN_MS, transaction: null };
}

/**
 * Outermost interceptor: the handler (and the interceptors inside this one)
 * run with a database deadline in the request scope. Nest binds `handle()` to
 * the async context it is called in, so calling it inside the scope is enough.
 */
@Injectable()
export class RequestDeadlineInterceptor implements NestInterceptor {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return runInScope(requestDatabaseScope(context.switchToHttp().getRequest<RequestContext>(), this.config), () => next.handle());
  }
}
