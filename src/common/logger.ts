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
    // synchronous stdout by default: lines keep their order with the plain
    // start-up text of main.ts, and nothing is lost on process.exit
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
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
