'use strict';
// `npm run cli -- <command>`: build when sources changed, then run the CLI.
const { buildIfStale } = require('./build-if-stale.cjs');

try {
  buildIfStale();
} catch (error) {
  process.stderr.write(`error: ${error.message}\n`);
  process.exit(1);
}
require('../dist/src/cli/cli.js').main();
