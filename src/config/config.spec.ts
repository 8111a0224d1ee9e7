import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../common/package-root';
import { ConfigError, loadConfig } from './config';

const SECRET = 'cursor-secret-0123456789abcdef';
const KEY_HEX = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256)).toString('hex');

/** `.env.example` as the shell would read it: KEY=value, optional double quotes, # comments. */
function readEnvExample(): Record<string, string> {
  const text = readFileSync(join(packageRoot(), '.env.example'), 'utf8');
  const entries = text
    .split('\n')
    .filter((line) => /^[A-Z_]+=/.test(line))
    .map((line) => {
      const at = line.indexOf('=');
      return [line.slice(0, at), line.slice(at + 1).replace(/^"(.*)"$/, '$1')] as const;
    });
  return Object.fromEntries(entries);
}

describe('.env.example lists every setting with its default', () => {
  test('the same variable names as src/config/config.ts reads', () => {
    const source = readFileSync(join(packageRoot(), 'src', 'config', 'config.ts'), 'utf8');
    const read = new Set([...source.matchAll(/env(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((match) => match[1]));
    expect(Object.keys(readEnvExample()).sort()).toEqual([...read].sort());
  });

  test('its values are the defaults: loading it changes nothing', () => {
    const example = readEnvExample();
    const base = { PGLITE_DIR: 'memory' };
    const fromExample = loadConfig({ ...example, ...base });
    const defaults = loadConfig(base);
    const { cursorSecret: _a, encryptionKey: _b, ...exampleRest } = fromExample;
    const { cursorSecret: _c, encryptionKey: _d, ...defaultRest } = defaults;
    expect(exampleRest).toEqual(defaultRest);
    // the real default directory (without writing its secrets file: both secrets are given)
    expect(loadConfig({}, { cursorSecret: 'c'.repeat(16), encryptionKey: Buffer.alloc(32) }).pgliteDir).toBe(example.PGLITE_DIR);
  });
});

describe('a bad setting is a ConfigError naming it', () => {
  test.each([
    [{ PORT: 'abc' }, /PORT/],
    [{ PORT: '-1' }, /PORT/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ DATABASE_URL: 'postgres://x/db' }, /CURSOR_SECRET and ENCRYPTION_KEY/],
    [{ DATABASE_URL: 'postgres://x/db', CURSOR_SECRET: SECRET }, /ENCRYPTION_KEY must be set/],
    [{ CURSOR_SECRET: 'short', ENCRYPTION_KEY: KEY_HEX }, /CURSOR_SECRET/],
    [{ REDIS_URL: 'http://x' }, /REDIS_URL/],
    [{ TRASH_PURGE_CRON: 'every hour' }, /TRASH_PURGE_CRON/],
    // five fields, but not a schedule the scheduler can run: the setting is named, not only the parser's complaint
    [{ TRASH_PURGE_CRON: 'x x x x x' }, /^TRASH_PURGE_CRON is not a valid cron expression/],
    [{ IDEMPOTENCY_PURGE_CRON: '99 * * * *' }, /^IDEMPOTENCY_PURGE_CRON is not a valid cron expression \(.*out of range/],
    [{ RATE_LIMIT_PER_MINUTE: '100', RATE_LIMIT_PER_HOUR: '50' }, /RATE_LIMIT_PER_HOUR/],
    [{ METRICS_PORT: 'abc' }, /METRICS_PORT/],
    [{ METRICS_PORT: '70000' }, /METRICS_PORT/],
    [{ PORT: '3000', METRICS_PORT: '3000' }, /^METRICS_PORT must differ from PORT/],
    [{ HTTP_REQUEST_TIMEOUT_MS: '0' }, /^HTTP_REQUEST_TIMEOUT_MS must be between 1000 and 3600000, got 0$/],
    [{ HTTP_HEADERS_TIMEOUT_MS: '15s' }, /^HTTP_HEADERS_TIMEOUT_MS must be an integer/],
    [{ HTTP_REQUEST_TIMEOUT_MS: '5000' }, /^HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS \(5000\), got 15000$/],
    [{ HTTP_MAX_CONNECTIONS: '0' }, /^HTTP_MAX_CONNECTIONS must be between 1 and/],
    [{ HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0' }, /^HTTP_MAX_CONNECTIONS_PER_ADDRESS must be between 1 and/],
    [{ RATE_LIMIT_REDIS_WAIT_MS: '0' }, /^RATE_LIMIT_REDIS_WAIT_MS must be between 1 and 5000/],
    [{ HTTP_BODY_MIN_BYTES_PER_SECOND: '0' }, /^HTTP_BODY_MIN_BYTES_PER_SECOND must be between 1 and/],
    [{ HTTP_BODY_GRACE_MS: '5s' }, /^HTTP_BODY_GRACE_MS must be an integer/],
    [{ TRUSTED_PROXIES: 'balancer.internal' }, /^TRUSTED_PROXIES must be IP addresses or CIDR ranges .*got "balancer.internal"$/],
    [{ TRUSTED_PROXIES: '10.0.0.0/33' }, /^TRUSTED_PROXIES must be .*got "10.0.0.0\/33"$/],
    [{ TRUSTED_PROXIES: '10.0.0.1,,10.0.0.2' }, /^TRUSTED_PROXIES must be/],
    [{ TRUSTED_PROXIES: '10.0.0.0/8/1' }, /^TRUSTED_PROXIES must be/],
    [{ SHUTDOWN_DRAIN_DELAY_MS: '-1' }, /^SHUTDOWN_DRAIN_DELAY_MS must be an integer/],
    [{ SHUTDOWN_TIMEOUT_MS: '99' }, /^SHUTDOWN_TIMEOUT_MS must be between 100 and/],
  ])('%j', (env, pattern) => {
    expect(() => loadConfig({ PGLITE_DIR: 'memory', ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ PGLITE_DIR: 'memory', ...env })).toThrow(pattern);
  });

  test('a server with both secrets is fine; cron "off" disables a job', () => {
    const config = loadConfig({ DATABASE_URL: 'postgresql://x/db', CURSOR_SECRET: SECRET, ENCRYPTION_KEY: KEY_HEX, TRASH_PURGE_CRON: 'off' });
    expect(config).toMatchObject({ databaseUrl: 'postgresql://x/db', trashPurgeCron: null, generatedSecrets: false });
  });

  test.each([
    [undefined, null],
    ['', null],
    ['off', null],
    ['9464', 9464],
    // any free port (tests); it can never collide with PORT's
    ['0', 0],
  ])('METRICS_PORT=%j is %j', (raw, expected) => {
    expect(loadConfig({ PGLITE_DIR: 'memory', METRICS_PORT: raw }).metricsPort).toBe(expected);
  });
  test.each([
    [undefined, []],
    ['', []],
    ['off', []],
    ['10.0.0.0/8, 192.168.1.7 ,fd00::/8,::1', ['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '::1']],
  ])('TRUSTED_PROXIES=%j is %j (off by default)', (raw, expected) => {
    expect(loadConfig({ PGLITE_DIR: 'memory', TRUSTED_PROXIES: raw }).trustedProxies).toEqual(expected);
  });
  test('METRICS_PORT=0 beside PORT=0 is fine (two free ports)', () => {
    expect(loadConfig({ PGLITE_DIR: 'memory', PORT: '0', METRICS_PORT: '0' }).metricsPort).toBe(0);
  });
});

describe('plainly weak secrets stop start-up with a one-line reason', () => {
  const base = { DATABASE_URL: 'postgres://x/db' };
  test.each([
    ['64 zeros', { CURSOR_SECRET: SECRET, ENCRYPTION_KEY: '0'.repeat(64) }, /^ENCRYPTION_KEY is too weak/],
    ['one byte repeated (base64)', { CURSOR_SECRET: SECRET, ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }, /^ENCRYPTION_KEY is too weak/],
    ['four values cycled', { CURSOR_SECRET: SECRET, ENCRYPTION_KEY: '00112233'.repeat(8) }, /^ENCRYPTION_KEY is too weak/],
    ['a cursor secret of one character', { CURSOR_SECRET: 'c'.repeat(32), ENCRYPTION_KEY: KEY_HEX }, /^CURSOR_SECRET is too weak/],
    ['a cursor secret of two characters cycled', { CURSOR_SECRET: 'ab'.repeat(16), ENCRYPTION_KEY: KEY_HEX }, /^CURSOR_SECRET is too weak/],
  ])('%s', (_what, env, reason) => {
    let error: unknown;
    try {
      loadConfig({ ...base, ...env });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(reason);
    expect((error as Error).message).not.toContain('\n');
  });

  test('random secrets pass, hex and base64, and so do generated ones', () => {
    for (let i = 0; i < 200; i++) {
      const key = randomBytes(32);
      const secret = randomBytes(8).toString('hex');
      expect(() => loadConfig({ ...base, CURSOR_SECRET: secret, ENCRYPTION_KEY: i % 2 ? key.toString('hex') : key.toString('base64') })).not.toThrow();
    }
    expect(() => loadConfig({ PGLITE_DIR: 'memory' })).not.toThrow();
  });
});
