import type { LoggerService } from '@nestjs/common';
import pino, { type Logger } from 'pino';
import type { AppConfig } from '../config/config';
import { requestLogContext } from './request-context';

export const LOGGER = Symbol('LOGGER');
export type AppLogger = Logger;

/**
 * A thrown value as a log field: message, code and stack only, never request
 * data that might carry a secret.
 */
export function loggableError(exception: unknown): Record<string, unknown> {
  if (exception instanceof Error) {
    // Drizzle's query errors carry the SQL parameters in their message: those
    // may be secrets (ciphertexts, hashes, request data), so only the cause is kept.
    const carriesParams = 'params' in exception;
    return {
      name: exception.name,
      message: carriesParams ? 'database query failed' : exception.message,
      code: (exception as { code?: unknown }).code,
      stack: carriesParams ? undefined : exception.stack,
      cause: exception.cause instanceof Error ? { message: exception.cause.message, code: (exception.cause as { code?: unknown }).code } : undefined,
    };
  }
  return { value: String(exception) };
}

/**
 * Structured JSON logs. Headers and bodies are never logged; the redact list
 * is a second line of defence for any object that carries a secret field.
 * Every line written while a request is served carries its `request_id` and
 * `trace_id`, from the request context (the mixin), whoever writes it.
 */
export function createLogger(config: Pick<AppConfig, 'logLevel'>, destination?: pino.DestinationStream): AppLogger {
  return pino(
    {
      level: config.logLevel,
      base: { service: 'agent-platform-api' },
      mixin: requestLogContext,
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
    destination ?? bufferedStdout(),
  );
}

/** How often one kind of repeated warning is written at most. */
const REPEATED_WARNING_EVERY_MS = 10_000;
const REPEATED_WARNINGS = new WeakMap<AppLogger, Map<string, { lastAt: number; left: number }>>();

/**
 * A warning that may repeat for every request (a database outage, a
 * tenant's own flood): written at most once per 10 s per logger and
 * message, the next line saying how many were left out (`repeated`), so a
 * flood neither floods the logs nor raises an alert per request.
 */
export function warnRepeated(logger: AppLogger, fields: Record<string, unknown>, message: string): void {
  let kinds = REPEATED_WARNINGS.get(logger);
  if (!kinds) REPEATED_WARNINGS.set(logger, (kinds = new Map()));
  let kind = kinds.get(message);
  if (!kind) kinds.set(message, (kind = { lastAt: -Infinity, left: 0 }));
  const now = performance.now();
  if (now - kind.lastAt < REPEATED_WARNING_EVERY_MS) {
    kind.left += 1;
    return;
  }
  kind.lastAt = now;
  logger.warn(kind.left > 0 ? { ...fields, repeated: kind.left } : fields, message);
  kind.left = 0;
}

const REQUEST_LINE_LOGGERS = new WeakMap<AppLogger, AppLogger>();

/**
 * The logger of the one line per request: the same stream, level and format,
 * without the redact pass. That line's fields are fixed and carry no secret
 * (ids, method, path, status, duration), and pino runs the wildcard paths
 * over every field of every line, which cost more than the rest of the line.
 */
export function requestLineLogger(logger: AppLogger): AppLogger {
  let child = REQUEST_LINE_LOGGERS.get(logger);
  if (!child) REQUEST_LINE_LOGGERS.set(logger, (child = logger.child({}, { redact: [] })));
  return child;
}

/** Lines are written to stdout in batches of about this many bytes... */
const LOG_BATCH_BYTES = 4096;
/** ...or at least this often, so a quiet server's lines are not held back. */
const LOG_FLUSH_MS = 100;

type BufferedStream = pino.DestinationStream & { flush(): void; flushSync(): void };
const BUFFERED = new WeakSet<object>();

/**
 * stdout, batched: one write syscall per ~20 request lines instead of one per
 * line on the event loop (measured in docs/performance.md). Synchronous
 * writes, so what is written keeps its order; what is buffered is written
 * every {@link LOG_FLUSH_MS} and synchronously on exit (process.exit, a fatal
 * error, the end of a SIGTERM shutdown). Only a SIGKILL loses the last lines.
 */
function bufferedStdout(): BufferedStream {
  const stream = pino.destination({ dest: 1, sync: true, minLength: LOG_BATCH_BYTES }) as unknown as BufferedStream;
  BUFFERED.add(stream);
  setInterval(() => stream.flush(), LOG_FLUSH_MS).unref();
  process.once('exit', () => flushQuietly(stream));
  return stream;
}

function flushQuietly(stream: BufferedStream): void {
  try {
    stream.flushSync();
  } catch {
    // stdout closed: nothing more can be written
  }
}

/** Writes out the lines still buffered (before plain text for the person starting the service, so the two keep their order on a terminal). */
export function flushLogger(logger: AppLogger): void {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as BufferedStream | undefined;
  if (stream && BUFFERED.has(stream)) flushQuietly(stream);
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
