import { Global, Inject, Injectable, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { DatabaseConnection } from '../database/connection';
import { Metrics } from './metrics';
import { MetricsServer } from './metrics.server';

/** Connects the database's own reports (failed queries, the pool) to the metrics. */
@Injectable()
class DatabaseMetrics implements OnModuleInit, OnApplicationShutdown {
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly metrics: Metrics,
    @Inject(DatabaseConnection) private readonly connection: DatabaseConnection,
  ) {}

  onModuleInit(): void {
    if (!this.metrics.enabled) return;
    this.unsubscribe = this.connection.queryErrors.subscribe((error) => this.metrics.queryError(error));
    if (this.connection.poolStats()) this.metrics.watchDatabasePool(() => this.connection.poolStats()!);
  }

  onApplicationShutdown(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}

/**
 * The service's one metrics registry (`Metrics`, injectable everywhere) and
 * the server that exposes it on METRICS_PORT. Without METRICS_PORT nothing
 * is collected and no port is opened.
 */
@Global()
@Module({
  providers: [
    { provide: Metrics, inject: [APP_CONFIG], useFactory: (config: AppConfig) => new Metrics(config.metricsPort !== null) },
    MetricsServer,
    DatabaseMetrics,
  ],
  exports: [Metrics, MetricsServer],
})
export class MetricsModule {}
