'use strict';
// `npm run start:dev`: tsc --watch rebuilds dist/ on every save and
// `node --watch` restarts the server when the files it loaded change.
// @nestjs/cli is not installed, so this stands in for `nest start --watch`.
const { spawn } = require('node:child_process');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..');
const tsc = spawn(
  process.execPath,
  [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json'), '--watch', '--preserveWatchOutput'],
  { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
);

let server = null;
let stopping = false;
function stop(code) {
  if (stopping) return;
  stopping = true;
  tsc.kill('SIGTERM');
  if (server && server.exitCode === null) {
    server.once('exit', () => process.exit(code));
    server.kill('SIGTERM');
  } else {
    process.exit(code);
  }
}

// tsc's progress goes to stderr (stdout is the server's JSON log stream); the
// server starts after tsc's first build, which rewrites every file in dist/
tsc.stdout.setEncoding('utf8');
tsc.stdout.on('data', (text) => {
  process.stderr.write(text);
  if (server || !text.includes('Watching for file changes')) return;
  server = spawn(process.execPath, ['--watch', '--watch-preserve-output', join(root, 'dist', 'src', 'main.js')], { cwd: root, stdio: 'inherit' });
  server.on('exit', (code) => stop(code ?? 1));
});
tsc.on('exit', (code) => stop(code ?? 1));
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
