import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { APP_OPTIONS, configureApp } from './bootstrap';
import { createLogger, PinoNestLogger } from './common/logger';
import { ConfigError, loadConfig } from './config/config';

const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config);
  const app = await NestFactory.create(AppModule.forRoot(config, logger), {
    ...APP_OPTIONS,
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  configureApp(app, logger);
  await app.init();

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
    app
      .close()
      .then(() => {
        logger.info('stopped');
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
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  const address = `http://${shownHost}:${config.port}/api/v1`;
  logger.info({ address, database: config.databaseUrl ? 'postgres' : `pglite:${config.pgliteDir}` }, `listening on ${address}`);
}

main().catch((error: unknown) => {
  // one line, no stack: a bad setting or an unreachable database is an operator's problem to read
  const reason = error instanceof ConfigError ? `invalid configuration: ${error.message}` : (error as Error).message;
  process.stderr.write(`agent-platform-api failed to start: ${reason.split('\n')[0]}\n`);
  process.exit(1);
});
