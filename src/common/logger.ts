import type { LoggerService } from '@nestjs/common';
import pino, { type Logger } from 'pino';
import type { AppConfig } from '../config/config';

export const LOGGER = Symbol('LOGGER');
export type AppLogger = Logger;

/**
 * Structured JSON logs. Headers and bodies are never logged; the redact list
 * is a second line of defence for any object that carries a secret field.
 */
export function createLogger(config: Pick<AppConfig, 'logLevel'>, destination?: pino.DestinationStream): AppLogger {
  return pino(
    {
      level: config.logLevel,
      base: { service: 'agent-platform-api' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers',
          '*.headers',
          'token',
          '*.token',
          'credentials',
          '*.credentials',
          'password',
          '*.password',
          'apiKey',
          '*.apiKey',
        ],
        censor: '[redacted]',
      },
      formatters: { level: (label) => ({ level: label }) },
    },
    // stdout written asynchronously: a request's log line costs no write
    // syscall on the event loop, and lines queued behind a write in flight
    // go out together. pino writes what is left synchronously on exit
    // (process.exit, a fatal error, the end of a SIGTERM shutdown); plain
    // text on stdout waits for {@link flushLogger} first, to keep the order.
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

/** Resolves once every line logged so far is written (before writing plain text to the same stream). */
export function flushLogger(logger: AppLogger): Promise<void> {
  // sonic-boom's flush(cb) does not wait for a write in flight; its 'drain' does
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    | { _writing?: boolean; once?(event: 'drain', fn: () => void): void }
    | undefined;
  return new Promise((resolve) => (stream?._writing && stream.once ? stream.once('drain', resolve) : resolve()));
}

/** Routes Nest's own log calls (bootstrap, exceptions) into pino. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: AppLogger) {}

  log(message: unknown, context?: string): void {
    // route-mapping chatter of Nest's bootstrap is debug-level for us
    this.logger.debug({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}
