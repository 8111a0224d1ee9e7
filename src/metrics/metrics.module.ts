import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Metrics } from './metrics';
import { MetricsServer } from './metrics.server';

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
  ],
  exports: [Metrics, MetricsServer],
})
export class MetricsModule {}
