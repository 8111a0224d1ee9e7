import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config';

const CURSOR_SECRET = 'cursor-secret-0123456789abcdef';
const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256));
const ENCRYPTION_KEY = KEY.toString('base64');

describe('encryption key for custom tool credentials', () => {
  it('refuses to start without ENCRYPTION_KEY when DATABASE_URL is set', () => {
    const env = { DATABASE_URL: 'postgres://db.example/app', CURSOR_SECRET };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(/ENCRYPTION_KEY/);
  });

  it('starts with DATABASE_URL when ENCRYPTION_KEY is set, and uses that key', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://db.example/app', CURSOR_SECRET, ENCRYPTION_KEY });
    expect(config.encryptionKey.equals(KEY)).toBe(true);
    expect(config.generatedSecrets).toBe(false);
  });

  it('rejects a key that is not 32 bytes', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db.example/app', CURSOR_SECRET, ENCRYPTION_KEY: 'c2hvcnQ=' })).toThrow(/ENCRYPTION_KEY/);
  });

  it('the embedded default generates a key once, persists it (mode 0600) and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-spec-'));
    try {
      const pgliteDir = join(dir, 'pglite');
      const first = loadConfig({ PGLITE_DIR: pgliteDir });
      const second = loadConfig({ PGLITE_DIR: pgliteDir });
      expect(first.encryptionKey).toHaveLength(32);
      expect(first.generatedSecrets).toBe(true);
      expect(second.encryptionKey.equals(first.encryptionKey)).toBe(true);
      const file = join(dir, 'secrets.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(Buffer.from(JSON.parse(readFileSync(file, 'utf8')).encryption_key, 'base64').equals(first.encryptionKey)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a secrets file that is not JSON stops start-up naming the file, not with a parser message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-spec-'));
    try {
      writeFileSync(join(dir, 'secrets.json'), 'garbage');
      expect(() => loadConfig({ PGLITE_DIR: join(dir, 'pglite') })).toThrow(ConfigError);
      expect(() => loadConfig({ PGLITE_DIR: join(dir, 'pglite') })).toThrow(/secrets\.json is not a valid secrets file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
