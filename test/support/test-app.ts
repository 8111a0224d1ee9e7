import { PGlite } from '@electric-sql/pglite';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { AppModule } from '../../src/app.module';
import { APP_OPTIONS, configureApp } from '../../src/bootstrap';
import { createLogger, type AppLogger } from '../../src/common/logger';
import { loadConfig, type AppConfig } from '../../src/config/config';
import { DatabaseConnection } from '../../src/database/connection';
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
export const TEST_ENCRYPTION_KEY = parseKey32(newSecretKey())!;

async function openTestDatabase(config: AppConfig, logger: AppLogger): Promise<DatabaseConnection> {
  if (config.databaseUrl) {
    const connection = await DatabaseConnection.open(config, logger);
    await connection.migrate();
    return connection;
  }
  const template = process.env.PGLITE_TEMPLATE;
  if (!template) throw new Error('PGLITE_TEMPLATE is not set: run the tests through jest (globalSetup)');
  const client = await PGlite.create({ loadDataDir: new Blob([readFileSync(template)]) });
  return DatabaseConnection.fromPglite(client);
}

/**
 * The production app (same module, same bootstrap) on a copy of the migrated
 * template database, or on `DATABASE_URL` when set (`npm run test:pg`).
 */
export async function createTestApp(overrides: Partial<AppConfig> = {}): Promise<TestApp> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const config = loadConfig(
    // test:pg sets all three, as a deployment on a server must
    { DATABASE_URL: process.env.DATABASE_URL, CURSOR_SECRET: process.env.CURSOR_SECRET, ENCRYPTION_KEY: process.env.ENCRYPTION_KEY, LOG_LEVEL: 'info' },
    {
      pgliteDir: 'memory',
      cursorSecret: 'test-cursor-secret-0123456789',
      encryptionKey: TEST_ENCRYPTION_KEY,
      jobsEnabled: false,
      ...overrides,
    },
  );
  const logger = createLogger(config, sink);
  const connection = await openTestDatabase(config, logger);
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config, logger, { connection })] })
    .setLogger(false as never)
    .compile();
  const app = moduleRef.createNestApplication(APP_OPTIONS);
  configureApp(app, logger);
  await app.init();
  return {
    app,
    http: request(app.getHttpServer()),
    connection,
    config,
    logs,
    close: () => app.close(),
  };
}
