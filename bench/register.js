'use strict';
// Lets `node -r ./bench/register.js bench/<script>.ts` run TypeScript with
// decorators (the app's repositories) the way Jest does: swc to CommonJS.
// NestJS 12 itself is ESM and is loaded through Node's require(esm).
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = function compileTs(module, filename) {
  const out = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    module: { type: 'commonjs' },
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      keepClassNames: true,
    },
  });
  module._compile(out.code, filename);
};
