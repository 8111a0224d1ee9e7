import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { AppModule } from './app.module';
import { APP_OPTIONS, composeHttpApp, initApp } from './http-app';
import { createHttpAdapter } from './http/adapter';
import { metricsFor } from './metrics/metrics.module';
import type { InFlightRequest, RequestTracker } from './http/request-tracker';
import { createLogger, flushLogger, PinoNestLogger, type AppLogger } from './common/logger';
import { API_PREFIX } from './common/api-paths';
import { HealthService } from './health/health.service';
import type { AppConfig } from './config/config';
import { StartupFixtures, type StartupFixtureResult } from './seed/startup-fixtures.service';

/** Past the deadline, closing the database may take this long before the process gives up on it. */
const DATABASE_CLOSE_MS = 3000;
/** At most this many in-flight requests are listed in one log line. */
const LISTED_REQUESTS = 50;

/**
 * SIGTERM/SIGINT (docs/decisions.md, "Shutdown"):
 * 1. drain: /readyz answers 503 at once, everything else is served as usual
 *    for SHUTDOWN_DRAIN_DELAY_MS, so the balancer stops routing here first
 *    (a second signal skips the rest of the delay);
 * 2. close: the port closes, in-flight requests finish (answers on keep-alive
 *    connections carry `Connection: close`), idle connections close;
 * 3. deadline: SHUTDOWN_TIMEOUT_MS after the port closed, every connection
 *    still open is cut and each request on it is logged by id, method and path;
 * 4. the database closes and the process exits: 1 only when a request was cut
 *    while the server was working on it (its outcome is unknown to the
 *    client); a client that was still sending, or not reading its answer,
 *    loses nothing of the server's doing: 0.
 */
class Shutdown {
  private phase: 'serving' | 'draining' | 'closing' = 'serving';
  private skipDrain: (() => void) | null = null;

  constructor(
    private readonly app: INestApplication,
    private readonly tracker: RequestTracker,
    private readonly config: AppConfig,
    private readonly logger: AppLogger,
  ) {}

  begin(signal: string): void {
    if (this.phase === 'draining') {
      this.logger.info({ signal }, 'second signal: closing now');
      this.skipDrain?.();
      return;
    }
    if (this.phase !== 'serving') return;
    this.phase = 'draining';
    this.app.get(HealthService).startDraining();
    this.logger.info(
      { signal, drain_delay_ms: this.config.shutdownDrainDelayMs, ...this.describe(this.tracker.inFlight()) },
      'shutting down: not ready any more, still serving for the drain delay',
    );
    void this.drain().then(
      (code) => this.exit(code),
      (error: unknown) => {
        this.logger.error({ err: { message: (error as Error).message } }, 'shutdown failed');
        this.exit(1);
      },
    );
  }

  private async drain(): Promise<number> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.config.shutdownDrainDelayMs);
      this.skipDrain = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.phase = 'closing';
    this.logger.info(
      { timeout_ms: this.config.shutdownTimeoutMs, ...this.describe(this.tracker.inFlight()) },
      'shutting down: port closed, finishing in-flight requests',
    );
    let lost = false;
    let cut: InFlightRequest[] = [];
    const deadline = setTimeout(() => {
      cut = this.tracker.inFlight();
      lost = cut.some((request) => request.phase === 'handling');
      for (const request of cut) {
        this.logger[request.phase === 'handling' ? 'error' : 'warn'](request, 'shutdown deadline: request cut');
      }
      this.tracker.closeAllConnections();
      // a database that does not let go must not keep the process either
      setTimeout(() => {
        this.logger.error('shutdown deadline: the database did not close; exiting');
        this.exit(1);
      }, DATABASE_CLOSE_MS).unref();
    }, this.config.shutdownTimeoutMs);
    // stop accepting and let in-flight requests finish first, so that they
    // still have the database and the key service's last flush sees them
    this.tracker.closeAfterAnswers();
    await this.app.getHttpAdapter().close();
    clearTimeout(deadline);
    await this.app.close();
    this.logger.info({ cut: cut.length }, cut.length > 0 ? 'stopped: requests cut at the deadline, database closed' : 'stopped: in-flight requests finished, database closed');
    return lost ? 1 : 0;
  }

  /** The count and the first few in-flight requests, for a log line. */
  private describe(requests: InFlightRequest[]): { in_flight: number; requests?: InFlightRequest[] } {
    return requests.length === 0 ? { in_flight: 0 } : { in_flight: requests.length, requests: requests.slice(0, LISTED_REQUESTS) };
  }

  private exit(code: number): void {
    this.logger.flush();
    process.exit(code);
  }
}

/**
 * Plain text on stderr: stdout is the JSON log stream (shippers collect it,
 * jq reads it), and tokens are shown exactly once, never logged; the curl
 * line must paste as it is.
 */
function announceKeys(startup: StartupFixtureResult, address: string): void {
  const lines: string[] = [];
  for (const key of startup.seeded?.generated_keys ?? []) {
    lines.push(`SEED_FILE generated key ${key.id} "${key.label}" for ${key.org_id} (shown once): ${key.token}`);
  }
  const demoKey = startup.demo?.generated_keys[0];
  if (demoKey) {
    lines.push(
      '',
      `First run: loaded the demo organization ${demoKey.org_id} into the empty embedded database.`,
      'Its API key has every scope and is shown only this once:',
      '',
      `curl -H "Authorization: Bearer ${demoKey.token}" ${address}/org`,
      '',
    );
  }
  if (lines.length > 0) process.stderr.write(lines.join('\n') + '\n');
}

/** Opens and closes the address the server will listen on; rejects with listen's own error (EADDRINUSE, ENOTFOUND, …). */
function assertCanListen(port: number, host: string): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Builds the app, loads start-up fixtures, listens; SIGTERM/SIGINT stop it gracefully. */
export async function runServer(config: AppConfig): Promise<void> {
  const logger = createLogger(config);
  const metrics = metricsFor(config);
  const app = await NestFactory.create(AppModule.forRoot(config, logger, { metrics }), createHttpAdapter(logger, metrics, config), {
    ...APP_OPTIONS,
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  const tracker = composeHttpApp(app);
  await initApp(app);
  // SEED_FILE (and the first-run demo) are loaded before the port opens
  let startup: StartupFixtureResult;
  try {
    // the first-run demo's and SEED_FILE's generated tokens are printed once the port is open;
    // a port that cannot be opened must fail before they are written, or they are lost
    await assertCanListen(config.port, config.host);
    startup = await app.get(StartupFixtures).load();
  } catch (error) {
    await app.close(); // release the database (and its directory lock) before exiting
    throw error;
  }

  const server = app.getHttpServer() as Server;
  const shutdown = new Shutdown(app, tracker, config, logger);
  process.on('SIGTERM', () => shutdown.begin('SIGTERM'));
  process.on('SIGINT', () => shutdown.begin('SIGINT'));

  await app.listen(config.port, config.host);
  const port = (server.address() as AddressInfo).port;
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  const address = `http://${shownHost}:${port}/${API_PREFIX}`;
  logger.info({ address, database: config.databaseUrl ? 'postgres' : `pglite:${config.pgliteDir}`, node: process.version }, `listening on ${address}`);
  flushLogger(logger);
  announceKeys(startup, address);
}
