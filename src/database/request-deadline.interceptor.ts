import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { runInScope } from './request-scope';

/**
 * What a request's database work may take in all: the statement timeout plus
 * this margin, so that the whole request — pool wait, every statement, the
 * rollback — ends within the statement timeout plus one second whatever the
 * database does (docs/decisions.md, "Timeouts").
 */
export const REQUEST_DATABASE_MARGIN_MS = 500;

/**
 * Outermost interceptor: the handler (and the interceptors inside this one)
 * run with a database deadline in the request scope. Nest binds `handle()` to
 * the async context it is called in, so calling it inside the scope is enough.
 */
@Injectable()
export class RequestDeadlineInterceptor implements NestInterceptor {
  private readonly budgetMs: number;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.budgetMs = config.dbStatementTimeoutMs + REQUEST_DATABASE_MARGIN_MS;
  }

  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return runInScope({ deadline: Date.now() + this.budgetMs, transaction: null }, () => next.handle());
  }
}
