import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { ClsModule } from 'nestjs-cls';
import { AgentsModule } from './agents/agents.module';
import { AuthModule } from './auth/auth.module';
import { ChatbotsModule } from './chatbots/chatbots.module';
import { CoreModule } from './common/core.module';
import { CustomToolsModule } from './custom-tools/custom-tools.module';
import { ConnectorsModule } from './connectors/connectors.module';
import { ConversationsModule } from './conversations/conversations.module';
import { EnvelopeInterceptor } from './common/envelope';
import { ErrorEnvelopeFilter } from './http/error.filter';
import type { AppLogger } from './common/logger';
import { ApiValidationPipe } from './common/validation';
import type { AppConfig } from './config/config';
import type { DatabaseConnection } from './database/connection';
import { DatabaseModule } from './database/database.module';
import { DatabaseTransactions } from './database/transactions';
import { SeedModule } from './seed/seed.module';
import { AuthenticationGuard } from './guards/authentication.guard';
import { AuthorizationGuard } from './guards/authorization.guard';
import { GuardsModule } from './guards/guards.module';
import { RateLimitGuard } from './guards/rate-limit.guard';
import { TenantConcurrencyGuard } from './guards/tenant-concurrency.guard';
import { HealthModule } from './health/health.module';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor';
import { EntityTagInterceptor } from './conditional/entity-tag.interceptor';
import { PreconditionInterceptor } from './conditional/precondition.interceptor';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { MetaModule } from './meta/meta.module';
import type { Metrics } from './metrics/metrics';
import { MetricsModule } from './metrics/metrics.module';
import { OrgsModule } from './orgs/orgs.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { SourcesModule } from './sources/sources.module';
import { TeamModule } from './team/team.module';
import { TriggersModule } from './triggers/triggers.module';
import { AnalyticsModule } from './analytics/analytics.module';

interface AppModuleOptions {
  /** the metrics registry, the one the HTTP adapter was given too (`metricsFor(config)`) */
  metrics: Metrics;
  /** an open connection to use instead of opening one from the config (tests) */
  connection?: DatabaseConnection;
}

/**
 * The application. Guards, pipes, filters and interceptors are registered
 * here as APP_* providers, so the app tests build is the production app.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: AppLogger, options: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // the request context (common/request-context.ts): opened by the first request hook
        // (src/http/request-hooks.ts), before anything Nest mounts would run, so no middleware
        // and the open transaction (`TransactionHost.tx`), begun by our adapter (src/database/transactions.ts)
        ClsModule.forRoot({ global: true, middleware: { mount: false }, plugins: [new ClsPluginTransactional({ adapter: new DatabaseTransactions() })] }),
        CoreModule.forRoot(config, logger),
        MetricsModule.forRoot(options.metrics),
        DatabaseModule.forRoot(options.connection),
        ...(config.jobsEnabled ? [ScheduleModule.forRoot()] : []),
        AuthModule,
        RateLimitModule,
        GuardsModule,
        IdempotencyModule,
        MetaModule,
        HealthModule,
        SeedModule,
        OrgsModule,
        TeamModule,
        AgentsModule,
        CustomToolsModule,
        SourcesModule,
        ConnectorsModule,
        ConversationsModule,
        TriggersModule,
        ChatbotsModule,
        AnalyticsModule,
      ],
      providers: [
        // the guards (src/guards/), which run in registration order: counted against the caller's
        // budget (429; the key was checked by the first request hook, so a bad key counts against
        // its client address and key guessing is throttled) → who is calling (401 for a missing or
        // bad key) → may they (scope and organization status: 403) → a slot among their tenant's
        // requests in progress (waits, or 503). A new guard goes here, in its place in that order.
        { provide: APP_GUARD, useExisting: RateLimitGuard },
        { provide: APP_GUARD, useExisting: AuthenticationGuard },
        { provide: APP_GUARD, useExisting: AuthorizationGuard },
        { provide: APP_GUARD, useExisting: TenantConcurrencyGuard },
        { provide: APP_PIPE, useClass: ApiValidationPipe },
        // interceptors nest in registration order: the ETag outermost, so a
        // replay is tagged like the first answer; idempotency outside the
        // envelope, so it stores and replays the full enveloped body; If-Match
        // inside idempotency, so a retry of a committed write is replayed, not
        // refused, and the check shares the keyed write's transaction (the
        // database deadline is set around the whole pipeline: src/http/request-hooks.ts)
        { provide: APP_INTERCEPTOR, useClass: EntityTagInterceptor },
        { provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor },
        { provide: APP_INTERCEPTOR, useClass: PreconditionInterceptor },
        { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
        { provide: APP_FILTER, useClass: ErrorEnvelopeFilter },
      ],
    };
  }
}
