#!/usr/bin/env node
'use strict';
// The CLI as `npx agent-platform …` (the package's bin) and `npm run cli -- …`:
// build when sources changed, then run it. tsc's output goes to stderr, so
// stdout holds only what the CLI prints.
const { buildIfStale } = require('./build-if-stale.cjs');

try {
  buildIfStale();
} catch (error) {
  process.stderr.write(`error: ${error.message}\n`);
  process.exit(1);
}
require('../dist/src/cli/cli.js').main();
