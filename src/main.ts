import 'reflect-metadata';
import { ConfigError, loadConfig } from './config/config';

/**
 * Entry point of the server. Settings are validated before the framework and
 * the database engine are loaded, so a bad setting fails in milliseconds with
 * one line instead of after the whole application has been imported.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const { runServer } = await import('./server.js');
  await runServer(config);
}

main().catch((error: unknown) => {
  // one line, no stack: a bad setting or an unreachable database is an operator's problem to read
  // a query error's message is the query's text and parameters (drizzle's): its code instead
  const query = error instanceof Error && 'params' in error;
  const code = query ? ((error.cause as { code?: unknown } | undefined)?.code ?? 'no code') : null;
  const message = query ? `a database query failed (${String(code)})` : error instanceof Error ? error.message : String(error);
  const reason =
    error instanceof ConfigError
      ? `invalid configuration: ${message}`
      : error instanceof Error && error.name === 'FixtureError'
        ? `invalid fixture: ${message}`
        : message;
  process.stderr.write(`agent-platform-api failed to start: ${reason.split('\n')[0]}\n`);
  process.exit(1);
});
