'use strict';
// Builds dist/ with tsc when any source is newer than the last build, so
// `npm run cli` and the tests that spawn the built server never run stale
// code, yet pay for a build only after a change. tsc's output goes to stderr:
// stdout belongs to the CLI's --json document.
const { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');
const { spawnSync } = require('node:child_process');

const root = resolve(__filename, '..', '..');
const stamp = join(root, 'dist', '.build-stamp');
const INPUTS = ['src', 'libs', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

function newestMtime(path) {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.mtimeMs;
  let newest = stats.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

function isStale() {
  if (!existsSync(stamp)) return true;
  const built = statSync(stamp).mtimeMs;
  return INPUTS.some((input) => existsSync(join(root, input)) && newestMtime(join(root, input)) > built);
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Two builders at once (test workers, a CLI call) would write the same files: one builds, the others wait. */
function withBuildLock(fn) {
  const lock = join(root, 'dist', '.build-lock');
  mkdirSync(join(root, 'dist'), { recursive: true });
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      // a builder that died leaves its lock behind: older than any real build
      if (Date.now() - statSync(lock).mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`another build holds ${lock}`, { cause: error });
      sleep(200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function buildIfStale() {
  if (!isStale()) return;
  withBuildLock(() => {
    if (!isStale()) return; // built by whoever held the lock
    const started = Date.now();
    // a first build takes most of a minute: say so, then how long it took
    process.stderr.write(existsSync(stamp) ? 'building dist/ (sources changed since the last build)…\n' : 'building dist/ (first build, about a minute)…\n');
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: ['ignore', 2, 2] });
    if (result.status !== 0) throw new Error('build failed (tsc -p tsconfig.build.json)');
    process.stderr.write(`built dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    // stamped with the start time: a file saved during the build triggers the next one
    writeFileSync(stamp, new Date(started).toISOString() + '\n');
    utimesSync(stamp, new Date(started), new Date(started));
  });
}

module.exports = { buildIfStale, isStale };

if (require.main === module) {
  try {
    buildIfStale();
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
