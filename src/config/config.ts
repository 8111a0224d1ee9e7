import { validateCronExpression } from 'cron';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, resolve } from 'node:path';
import { newSecretKey, parseKey32 } from '../../libs/crypto/crypto';

/**
 * The one place that reads the environment. Everything else
 * receives this typed object through the `APP_CONFIG` token.
 */
export interface AppConfig {
  port: number;
  host: string;
  /** PostgreSQL server; null means the embedded PGlite database */
  databaseUrl: string | null;
  /** PGlite data directory, or 'memory' */
  pgliteDir: string;
  seedFile: string | null;
  redisUrl: string | null;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** HMAC secret of pagination cursors */
  cursorSecret: string;
  /** AES-256-GCM key for custom tool credentials */
  encryptionKey: Buffer;
  rateLimitPerMinute: number;
  rateLimitPerHour: number;
  /** per-plan overrides of the two rate-limit windows (`RATE_LIMIT_PLANS`), by org plan name */
  rateLimitPlans: Record<string, RateLimitBudget>;
  /** cron expression of the agent-trash purge; null disables the job */
  trashPurgeCron: string | null;
  /** cron expression of the idempotency-record purge; null disables the job */
  idempotencyPurgeCron: string | null;
  /** per-statement client-side timeout against a PostgreSQL server */
  dbStatementTimeoutMs: number;
  dbPoolMax: number;
  /**
   * what sits between the service and the PostgreSQL server: 'transaction' is a pooler in
   * transaction mode (PgBouncer), which hands each transaction to any server connection, so
   * the service keeps nothing on a connection between transactions; 'none' is a direct
   * connection or a session-mode pooler
   */
  databasePooler: 'none' | 'transaction';
  /** requests one organization may have in progress on this instance (each works on at most one pool connection at a time) */
  orgConcurrency: number;
  /** requests one API key may have in progress on this instance */
  keyConcurrency: number;
  /** how long a validated API key may be served from memory */
  apiKeyCacheTtlMs: number;
  /** time a client has to send a whole request (headers and body); Node answers 408 and closes after it */
  httpRequestTimeoutMs: number;
  /** time a client has to send the request headers */
  httpHeadersTimeoutMs: number;
  /** open connections at most; at the cap an idle keep-alive connection is closed for a new one, or the new one is refused when none is idle */
  httpMaxConnections: number;
  /** open connections at most from one client address (an IPv6 /64 counts as one), idle ones shed first like at the cap */
  httpMaxConnectionsPerAddress: number;
  /**
   * the body-progress budget: a connection still sending its body counts as busy only while the
   * body has arrived at this rate (bytes per second) on average, after a first grace period
   */
  httpBodyMinBytesPerSecond: number;
  /** the body-progress budget's grace period, from when the body starts being read */
  httpBodyGraceMs: number;
  /**
   * proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the client address the rate
   * limits count; empty (the default): the connection's own address, whatever the header says
   */
  trustedProxies: string[];
  /** how long a request waits for Redis's rate-limit count before it is decided from this instance's memory */
  rateLimitRedisWaitMs: number;
  /** after SIGTERM/SIGINT: how long /readyz answers 503 while everything else is still served */
  shutdownDrainDelayMs: number;
  /** after the drain delay: how long in-flight requests may take before they are cut */
  shutdownTimeoutMs: number;
  /** scheduled jobs run in the server, never in one-shot CLI commands */
  jobsEnabled: boolean;
  /** true when the embedded database had no configured secrets and they were generated */
  generatedSecrets: boolean;
  /**
   * port of the Prometheus endpoint (GET /metrics), on HOST beside the API
   * but never on its port; null (the default) collects nothing and opens nothing
   */
  metricsPort: number | null;
}

export interface RateLimitBudget {
  perMinute: number;
  perHour: number;
}

export class ConfigError extends Error {}

/** The HTTP limits' defaults, for an app built without a loaded config (tests, bench). */
export const DEFAULT_HTTP_LIMITS = {
  httpRequestTimeoutMs: 30_000,
  httpHeadersTimeoutMs: 15_000,
  httpMaxConnections: 1000,
  httpMaxConnectionsPerAddress: 500,
  httpBodyMinBytesPerSecond: 1024,
  httpBodyGraceMs: 5000,
  trustedProxies: [] as string[],
};

/** What Redis trouble may add to a request at most (docs/decisions.md, "Redis trouble"). */
export const DEFAULT_RATE_LIMIT_REDIS_WAIT_MS = 25;

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function intSetting(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A port that may be switched off: empty or "off" is null. */
function optionalPortSetting(env: Env, name: string): number | null {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '' || ['off', 'false', 'disabled', 'none'].includes(raw.toLowerCase())) return null;
  return intSetting(env, name, 0, 0, 65535);
}

function cronSetting(env: Env, name: string, fallback: string): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['off', 'false', 'disabled', 'none'].includes(raw.trim().toLowerCase())) return null;
  const fields = raw.trim().split(/\s+/);
  if (fields.length < 5 || fields.length > 6) throw new ConfigError(`${name} must be a cron expression or "off", got "${raw}"`);
  // the scheduler's own parser, so that a bad field fails here naming the setting, not at start-up without it
  const { valid, error } = validateCronExpression(raw.trim());
  if (!valid) throw new ConfigError(`${name} is not a valid cron expression (${error?.message ?? 'invalid'}), got "${raw}"`);
  return raw.trim();
}

/**
 * `TRUSTED_PROXIES=10.0.0.0/8,192.168.1.7`: addresses and CIDR ranges, IPv4
 * or IPv6. Empty or `off`: no proxy is trusted.
 */
function parseTrustedProxies(raw: string | undefined): string[] {
  const value = raw?.trim() ?? '';
  if (value === '' || ['off', 'false', 'none'].includes(value.toLowerCase())) return [];
  return value.split(',').map((entry) => {
    const [address, prefix, ...rest] = entry.trim().split('/');
    const family = isIP(address);
    const maxPrefix = family === 4 ? 32 : 128;
    const validPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= maxPrefix);
    if (family === 0 || !validPrefix || rest.length > 0) {
      throw new ConfigError(`TRUSTED_PROXIES must be IP addresses or CIDR ranges separated by commas (e.g. "10.0.0.0/8,192.168.1.7"), got "${entry.trim()}"`);
    }
    return entry.trim();
  });
}

/**
 * `RATE_LIMIT_PLANS=free:60/1000,pro:600/10000`: plan name, then requests per
 * minute / per hour. Plans not listed use RATE_LIMIT_PER_MINUTE / _PER_HOUR.
 */
export function parseRateLimitPlans(raw: string | undefined): Record<string, RateLimitBudget> {
  const plans: Record<string, RateLimitBudget> = {};
  if (raw === undefined || raw.trim() === '') return plans;
  for (const entry of raw.split(',')) {
    const match = /^\s*([A-Za-z0-9_-]+)\s*:\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(entry);
    if (!match) throw new ConfigError(`RATE_LIMIT_PLANS must look like "free:60/1000,pro:600/10000", got "${raw}"`);
    const [, plan, perMinute, perHour] = match;
    const budget = { perMinute: Number(perMinute), perHour: Number(perHour) };
    if (budget.perMinute < 1 || budget.perHour < budget.perMinute) {
      throw new ConfigError(`RATE_LIMIT_PLANS: ${plan} needs 1 <= per-minute <= per-hour, got ${perMinute}/${perHour}`);
    }
    plans[plan] = budget;
  }
  return plans;
}

interface PersistedSecrets {
  cursor_secret: string;
  encryption_key: string;
}

/**
 * The embedded default must work with no configuration at all, yet cursors
 * and ciphertexts must survive a restart: the first start generates both
 * secrets and keeps them beside the data directory (mode 0600).
 */
function embeddedSecrets(pgliteDir: string): PersistedSecrets {
  if (pgliteDir === 'memory') return { cursor_secret: newSecretKey(), encryption_key: newSecretKey() };
  const file = resolve(dirname(resolve(pgliteDir)), 'secrets.json');
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8');
    let parsed: Partial<PersistedSecrets> | null = null;
    try {
      parsed = JSON.parse(text) as Partial<PersistedSecrets> | null;
    } catch {
      // not JSON: reported below like any other invalid content
    }
    if (typeof parsed?.cursor_secret === 'string' && typeof parsed.encryption_key === 'string') {
      return parsed as PersistedSecrets;
    }
    throw new ConfigError(`${file} is not a valid secrets file; remove it or set CURSOR_SECRET and ENCRYPTION_KEY`);
  }
  const secrets = { cursor_secret: newSecretKey(), encryption_key: newSecretKey() };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return secrets;
}

/**
 * "Plainly weak" secrets: one byte repeated, or a handful of
 * values cycled. 32 random bytes take ~30 distinct values (fewer than 8 has a
 * probability far below 1e-20); a 16-character random secret, even in hex,
 * takes fewer than 5 distinct characters with a probability below 1e-6.
 */
const MIN_DISTINCT_KEY_BYTES = 8;
const MIN_DISTINCT_SECRET_BYTES = 5;

function distinctCount(bytes: Uint8Array): number {
  return new Set(bytes).size;
}

const POOLER_MODES = ['none', 'transaction'] as const;

function poolerSetting(env: Env): AppConfig['databasePooler'] {
  const raw = env.DATABASE_POOLER?.trim() || 'none';
  if (!(POOLER_MODES as readonly string[]).includes(raw)) throw new ConfigError(`DATABASE_POOLER must be one of ${POOLER_MODES.join(', ')}, got "${raw}"`);
  return raw as AppConfig['databasePooler'];
}

export function loadConfig(env: Env = process.env, overrides: Partial<AppConfig> = {}): AppConfig {
  const databaseUrl = env.DATABASE_URL?.trim() || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const pgliteDir = env.PGLITE_DIR?.trim() || '.data/pglite';

  const logLevel = (env.LOG_LEVEL?.trim() || 'info') as AppConfig['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);

  let cursorSecret = env.CURSOR_SECRET?.trim() || '';
  let encryptionKeyRaw = env.ENCRYPTION_KEY?.trim() || '';
  let generatedSecrets = false;
  if (!cursorSecret || !encryptionKeyRaw) {
    if (databaseUrl) {
      const missing = [!cursorSecret && 'CURSOR_SECRET', !encryptionKeyRaw && 'ENCRYPTION_KEY'].filter(Boolean).join(' and ');
      throw new ConfigError(`${missing} must be set when DATABASE_URL is set (all instances must share them)`);
    }
    if (!overrides.cursorSecret || !overrides.encryptionKey) {
      const persisted = embeddedSecrets(pgliteDir);
      cursorSecret ||= persisted.cursor_secret;
      encryptionKeyRaw ||= persisted.encryption_key;
      generatedSecrets = true;
    }
  }
  if (cursorSecret && cursorSecret.length < 16) throw new ConfigError('CURSOR_SECRET must be at least 16 characters');
  if (cursorSecret && distinctCount(Buffer.from(cursorSecret, 'utf8')) < MIN_DISTINCT_SECRET_BYTES) {
    throw new ConfigError(`CURSOR_SECRET is too weak: it has fewer than ${MIN_DISTINCT_SECRET_BYTES} distinct characters; use a random value`);
  }
  const encryptionKey = encryptionKeyRaw ? parseKey32(encryptionKeyRaw) : null;
  if (encryptionKeyRaw && !encryptionKey) throw new ConfigError('ENCRYPTION_KEY must be 32 bytes, base64 or hex encoded');
  if (encryptionKey && distinctCount(encryptionKey) < MIN_DISTINCT_KEY_BYTES) {
    throw new ConfigError(`ENCRYPTION_KEY is too weak: its 32 bytes take fewer than ${MIN_DISTINCT_KEY_BYTES} distinct values; use 32 random bytes`);
  }

  const dbPoolMax = intSetting(env, 'DB_POOL_MAX', 10, 1, 1000);
  // half the pool: one organization's slow requests leave the other half to everyone else
  const orgConcurrency = intSetting(env, 'ORG_CONCURRENCY', Math.max(1, Math.ceil(dbPoolMax / 2)), 1, 10_000);
  const config: AppConfig = {
    port: intSetting(env, 'PORT', 3000, 0, 65535),
    host: env.HOST?.trim() || '0.0.0.0',
    databaseUrl,
    pgliteDir,
    seedFile: env.SEED_FILE?.trim() || null,
    redisUrl: env.REDIS_URL?.trim() || null,
    logLevel,
    cursorSecret,
    encryptionKey: encryptionKey ?? Buffer.alloc(0),
    rateLimitPerMinute: intSetting(env, 'RATE_LIMIT_PER_MINUTE', 600, 1, 1_000_000),
    rateLimitPerHour: intSetting(env, 'RATE_LIMIT_PER_HOUR', 10_000, 1, 100_000_000),
    rateLimitPlans: parseRateLimitPlans(env.RATE_LIMIT_PLANS),
    trashPurgeCron: cronSetting(env, 'TRASH_PURGE_CRON', '0 * * * *'),
    idempotencyPurgeCron: cronSetting(env, 'IDEMPOTENCY_PURGE_CRON', '*/10 * * * *'),
    dbStatementTimeoutMs: intSetting(env, 'DB_STATEMENT_TIMEOUT_MS', 5000, 100, 600_000),
    dbPoolMax,
    databasePooler: poolerSetting(env),
    orgConcurrency,
    keyConcurrency: intSetting(env, 'KEY_CONCURRENCY', Math.max(1, orgConcurrency - 1), 1, 10_000),
    apiKeyCacheTtlMs: intSetting(env, 'API_KEY_CACHE_TTL_MS', 5000, 0, 5000),
    httpRequestTimeoutMs: intSetting(env, 'HTTP_REQUEST_TIMEOUT_MS', DEFAULT_HTTP_LIMITS.httpRequestTimeoutMs, 1000, 3_600_000),
    httpHeadersTimeoutMs: intSetting(env, 'HTTP_HEADERS_TIMEOUT_MS', DEFAULT_HTTP_LIMITS.httpHeadersTimeoutMs, 1000, 3_600_000),
    httpMaxConnections: intSetting(env, 'HTTP_MAX_CONNECTIONS', DEFAULT_HTTP_LIMITS.httpMaxConnections, 1, 1_000_000),
    httpMaxConnectionsPerAddress: intSetting(env, 'HTTP_MAX_CONNECTIONS_PER_ADDRESS', DEFAULT_HTTP_LIMITS.httpMaxConnectionsPerAddress, 1, 1_000_000),
    httpBodyMinBytesPerSecond: intSetting(env, 'HTTP_BODY_MIN_BYTES_PER_SECOND', DEFAULT_HTTP_LIMITS.httpBodyMinBytesPerSecond, 1, 1_048_576),
    httpBodyGraceMs: intSetting(env, 'HTTP_BODY_GRACE_MS', DEFAULT_HTTP_LIMITS.httpBodyGraceMs, 100, 3_600_000),
    trustedProxies: parseTrustedProxies(env.TRUSTED_PROXIES),
    rateLimitRedisWaitMs: intSetting(env, 'RATE_LIMIT_REDIS_WAIT_MS', DEFAULT_RATE_LIMIT_REDIS_WAIT_MS, 1, 5000),
    shutdownDrainDelayMs: intSetting(env, 'SHUTDOWN_DRAIN_DELAY_MS', 5000, 0, 600_000),
    shutdownTimeoutMs: intSetting(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    jobsEnabled: true,
    generatedSecrets,
    metricsPort: optionalPortSetting(env, 'METRICS_PORT'),
    ...overrides,
  };
  if (config.seedFile && !existsSync(config.seedFile)) throw new ConfigError(`SEED_FILE ${config.seedFile} does not exist`);
  if (config.redisUrl && !/^rediss?:\/\//.test(config.redisUrl)) throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
  // 0 is "any free port" for both, so only two fixed ports can collide
  if (config.metricsPort !== null && config.metricsPort !== 0 && config.metricsPort === config.port) {
    throw new ConfigError(`METRICS_PORT must differ from PORT (${config.port}): API clients must not reach the metrics`);
  }
  if (config.httpHeadersTimeoutMs > config.httpRequestTimeoutMs) {
    // Node refuses a headers timeout longer than the request timeout (the headers are part of the request)
    throw new ConfigError(`HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS (${config.httpRequestTimeoutMs}), got ${config.httpHeadersTimeoutMs}`);
  }
  if (config.rateLimitPerHour < config.rateLimitPerMinute) {
    throw new ConfigError('RATE_LIMIT_PER_HOUR must be at least RATE_LIMIT_PER_MINUTE');
  }
  return config;
}

export const APP_CONFIG = Symbol('APP_CONFIG');
