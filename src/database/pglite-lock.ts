import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * PGlite has no server process to arbitrate writers: two processes opening
 * one directory silently lose acknowledged writes. The embedded database
 * therefore takes an exclusive lock file beside its directory; a second
 * process refuses to start. A lock left by a dead process is taken over.
 */
export class PgliteDirectoryLock {
  private constructor(private readonly path: string) {}

  static acquire(dataDir: string): PgliteDirectoryLock {
    const path = `${resolve(dataDir)}.lock`;
    mkdirSync(dirname(path), { recursive: true });
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        return new PgliteDirectoryLock(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const holder = Number.parseInt(safeRead(path), 10);
        if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
          throw new Error(
            `the embedded database ${resolve(dataDir)} is in use by process ${holder}; ` +
              'stop it, or give this process another PGLITE_DIR or a DATABASE_URL',
            { cause: error },
          );
        }
        // stale lock of a process that is gone: remove it and try once more
        try {
          unlinkSync(path);
        } catch {
          /* another starter removed it first */
        }
      }
    }
    throw new Error(`could not lock the embedded database directory ${resolve(dataDir)}`);
  }

  release(): void {
    try {
      if (safeRead(this.path) === String(process.pid)) unlinkSync(this.path);
    } catch {
      /* already gone */
    }
  }
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
