import { PGlite } from '@electric-sql/pglite';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { AppModule } from '../../src/app.module';
import { APP_OPTIONS, composeHttpApp, initApp } from '../../src/http-app';
import { createHttpAdapter } from '../../src/http/adapter';
import { metricsFor } from '../../src/metrics/metrics.module';
import { createLogger, type AppLogger } from '../../src/common/logger';
import { loadConfig, type AppConfig } from '../../src/config/config';
import { DatabaseConnection, PGLITE_EXTENSIONS } from '../../src/database/connection';
import { OpenApiDocumentHolder } from '../../src/meta/meta.controller';
import { recordDocument, recordingAgent } from './status-recorder';
import { newSecretKey, parseKey32 } from '../../libs/crypto/crypto';

export interface TestApp {
  app: INestApplication;
  http: TestAgent;
  connection: DatabaseConnection;
  config: AppConfig;
  /** every log line the app wrote, for assertions that secrets never appear */
  logs: string[];
  close(): Promise<void>;
}

/** Shared by every test file of a run, so a leak test can read all of them. */
const TEST_ENCRYPTION_KEY = parseKey32(newSecretKey())!;

async function openTestDatabase(config: AppConfig, logger: AppLogger): Promise<DatabaseConnection> {
  if (config.databaseUrl) {
    const connection = await DatabaseConnection.open(config, logger);
    await connection.migrate();
    return connection;
  }
  const template = process.env.PGLITE_TEMPLATE;
  if (!template) throw new Error('PGLITE_TEMPLATE is not set: run the tests through jest (globalSetup)');
  const client = await PGlite.create({ loadDataDir: new Blob([readFileSync(template)]), extensions: PGLITE_EXTENSIONS });
  return DatabaseConnection.fromPglite(client);
}

interface TestAppOptions {
  /** test-only modules to mount beside the production ones (e.g. controllers with write routes) */
  imports?: NonNullable<ModuleMetadata['imports']>;
}

/**
 * The production app (same module, same bootstrap) on a copy of the migrated
 * template database, or on `DATABASE_URL` when set (`npm run test:pg`).
 */
export async function createTestApp(overrides: Partial<AppConfig> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const config = loadConfig(
    {
      DATABASE_URL: process.env.DATABASE_URL,
      // set by scripts/test-pgbouncer.sh: the suite then runs through a pooler in transaction mode
      DATABASE_POOLER: process.env.DATABASE_POOLER,
      LOG_LEVEL: 'info',
      CURSOR_SECRET: 'test-cursor-secret-0123456789',
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY.toString('base64'),
    },
    {
      pgliteDir: 'memory',
      cursorSecret: 'test-cursor-secret-0123456789',
      encryptionKey: TEST_ENCRYPTION_KEY,
      jobsEnabled: false,
      // tests of other features may send thousands of requests with one key
      // within a minute; rate-limit tests set their own small limits
      rateLimitPerMinute: 1_000_000,
      rateLimitPerHour: 100_000_000,
      ...overrides,
    },
  );
  const logger = createLogger(config, sink);
  const connection = await openTestDatabase(config, logger);
  const metrics = metricsFor(config);
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config, logger, { connection, metrics }), ...(options.imports ?? [])] })
    .setLogger(false as never)
    .compile();
  const app = moduleRef.createNestApplication(createHttpAdapter(logger, metrics, config), APP_OPTIONS);
  composeHttpApp(app);
  try {
    await initApp(app);
  } catch (error) {
    // an app that refuses to start (tests of start-up checks) must not keep its database open
    await app.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    throw error;
  }
  // the production document only: test-only modules add routes of their own
  if (!options.imports?.length) recordDocument(app.get(OpenApiDocumentHolder).get());
  return {
    app,
    // every response is recorded: global-teardown.ts checks its status is documented on the operation
    http: recordingAgent(request(app.getHttpServer())),
    connection,
    config,
    logs,
    close: () => app.close(),
  };
}
