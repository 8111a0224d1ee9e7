import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LOGGER, type AppLogger } from '../common/logger';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Metrics } from './metrics';

const METRICS_PATH = '/metrics';

/**
 * GET /metrics on its own node:http server and port (METRICS_PORT): outside
 * the API's pipeline and port, so API clients can never reach it and a
 * scrape is never rate limited, logged as a request or counted in the HTTP
 * metrics. Opened when the application starts, closed when it stops.
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private server: Server | null = null;

  constructor(
    private readonly metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.metricsPort === null) return;
    const server = createServer((req, res) => void this.answer(req, res));
    // a scraper's keep-alive connection must not hold shutdown up
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) => reject(new Error(`METRICS_PORT ${this.config.metricsPort}: ${error.message}`)));
      server.listen({ port: this.config.metricsPort, host: this.config.host }, () => resolve());
    });
    this.server = server;
    const { address, port } = server.address() as AddressInfo;
    this.logger.info({ metrics_address: `${address}:${port}${METRICS_PATH}` }, `metrics on port ${port}${METRICS_PATH}`);
  }

  /** Where the server listens (port 0 picks a free one), or null when metrics are off. */
  address(): AddressInfo | null {
    return (this.server?.address() as AddressInfo | null | undefined) ?? null;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== METRICS_PATH) return plain(res, 404, 'Not found. Metrics are at /metrics.\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return plain(res, 405, 'Method not allowed.\n');
    }
    let body: string;
    try {
      body = await this.metrics.render();
    } catch (error) {
      this.logger.error({ err: { message: (error as Error).message } }, 'metrics could not be rendered');
      return plain(res, 500, 'Metrics could not be rendered.\n');
    }
    res.statusCode = 200;
    res.setHeader('Content-Type', this.metrics.registry.contentType);
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.setHeader('Cache-Control', 'no-store');
    res.end(req.method === 'HEAD' ? undefined : body);
  }
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.end(text);
}
