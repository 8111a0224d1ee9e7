#!/usr/bin/env node
'use strict';
// The CLI as `npx agent-platform …` (the package's bin) and `npm run cli -- …`:
// build when sources changed, then run it. tsc's output goes to stderr, so
// stdout holds only what the CLI prints.
const { buildIfStale } = require('./build-if-stale.cjs');

// `npm run` (without -s) prints its "> script" banner on stdout before we
// start; we cannot take it back, so say how to get a clean --json stdout.
if (process.argv.includes('--json') && ['run', 'run-script'].includes(process.env.npm_command) && process.env.npm_config_loglevel !== 'silent') {
  process.stderr.write('note: npm printed its "> cli" banner on stdout before the JSON; `npx agent-platform … --json` or `npm run -s cli -- … --json` prints the JSON alone\n');
}

try {
  buildIfStale();
} catch (error) {
  process.stderr.write(`error: ${error.message}\n`);
  process.exit(1);
}
require('../dist/src/cli/cli.js').main();
