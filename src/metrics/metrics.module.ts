import { Global, Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { JOB_RUN_RECORDER } from '../common/scheduled-jobs';
import type { AppConfig } from '../config/config';
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
@Module({})
export class MetricsModule {
  /** `metrics`: the instance the HTTP adapter counts requests in too (made by whoever creates both) */
  static forRoot(metrics: Metrics): DynamicModule {
    return {
      module: MetricsModule,
      providers: [{ provide: Metrics, useValue: metrics }, { provide: JOB_RUN_RECORDER, useExisting: Metrics }, MetricsServer, DatabaseMetrics],
      exports: [Metrics, JOB_RUN_RECORDER, MetricsServer],
    };
  }
}

/** The registry of a service built from `config`: collecting only when METRICS_PORT is set. */
export function metricsFor(config: Pick<AppConfig, 'metricsPort'>): Metrics {
  return new Metrics(config.metricsPort !== null);
}
