import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { AppModule } from './app.module';
import { APP_OPTIONS, configureApp, createHttpAdapter, initApp } from './bootstrap';
import { createLogger, flushLogger, PinoNestLogger } from './common/logger';
import { API_PREFIX } from './common/api-paths';
import type { AppConfig } from './config/config';
import { StartupFixtures, type StartupFixtureResult } from './fixtures/startup-fixtures.service';

const SHUTDOWN_GRACE_MS = 10_000;

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
  const app = await NestFactory.create(AppModule.forRoot(config, logger), createHttpAdapter(logger), {
    ...APP_OPTIONS,
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  configureApp(app, logger);
  await initApp(app);
  // operations.md: SEED_FILE (and the first-run demo) are loaded before the port opens
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
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error('shutdown grace period elapsed; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    // stop accepting and let in-flight requests finish first, so that they
    // still have the database and the key service's last flush sees them
    app
      .getHttpAdapter()
      .close()
      .then(() => app.close())
      .then(() => {
        logger.info('stopped: in-flight requests finished, database closed');
        logger.flush();
        process.exit(0);
      })
      .catch((error: unknown) => {
        logger.error({ err: { message: (error as Error).message } }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  await app.listen(config.port, config.host);
  const port = (server.address() as AddressInfo).port;
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  const address = `http://${shownHost}:${port}/${API_PREFIX}`;
  logger.info({ address, database: config.databaseUrl ? 'postgres' : `pglite:${config.pgliteDir}` }, `listening on ${address}`);
  flushLogger(logger);
  announceKeys(startup, address);
}
