'use strict';
// `npm run start:dev`: `tsc --watch` rebuilds dist/ on every save and this
// process restarts the server after each rebuild. @nestjs/cli is not
// installed, so this stands in for `nest start --watch`.
//
// stdout is the server's JSON log stream and nothing else (pipe it to jq):
// tsc's progress and this script's own lines go to stderr. That is why the
// restarts are done here rather than by `node --watch`, which prints its
// "Restarting …" lines on the stdout it shares with the server.
//
// A development server has no load balancer to drain: SHUTDOWN_DRAIN_DELAY_MS
// defaults to 0 here (production: 5000), so a restart takes a moment, not 5 s.
const { spawn } = require('node:child_process');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..');
const env = { ...process.env, SHUTDOWN_DRAIN_DELAY_MS: process.env.SHUTDOWN_DRAIN_DELAY_MS ?? '0' };
const say = (text) => process.stderr.write(`[start:dev] ${text}\n`);

const tsc = spawn(
  process.execPath,
  [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json'), '--watch', '--preserveWatchOutput'],
  { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
);

let server = null;
let stopping = false;
/** a rebuild finished while the previous server was still stopping: start once it has exited */
let pending = false;

function startServer() {
  pending = false;
  const child = spawn(process.execPath, [join(root, 'dist', 'src', 'main.js')], { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] });
  server = child;
  child.on('exit', (code, signal) => {
    if (server === child) server = null;
    if (stopping) return;
    if (pending) startServer();
    else say(`server exited (${signal ?? code}); waiting for the next change`);
  });
}

/** the embedded database belongs to one process at a time: the old server exits before the new one starts */
function restart() {
  if (stopping) return;
  if (!server) return startServer();
  say('sources rebuilt: restarting the server');
  pending = true;
  server.kill('SIGTERM');
}

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

// tsc prints "Found N errors. Watching for file changes." after each build,
// the first one included; the server (re)starts then, once per build
tsc.stdout.setEncoding('utf8');
tsc.stdout.on('data', (text) => {
  process.stderr.write(text);
  if (text.includes('Watching for file changes')) restart();
});
tsc.on('exit', (code) => stop(code ?? 1));
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
