'use strict';
// Jest runs CommonJS; NestJS 12 ships ESM only. Node 20 loads it through
// require(esm), but Jest's module runtime does not (before Node 24.9), so this
// transformer compiles our TypeScript and those ESM packages to CommonJS with
// swc. `import.meta.url` has no CommonJS spelling, so it is rewritten first.
const { transformSync } = require('@swc/core');

const IMPORT_META_URL = /\bimport\.meta\.url\b/g;
// ESM modules that rebuild `require` with createRequire: CommonJS has its own.
const CREATE_REQUIRE = /^\s*const require = createRequire\([^)]*\);?[ \t]*$/gm;

module.exports = {
  process(source, filename) {
    const isTs = filename.endsWith('.ts');
    const code = source.replace(CREATE_REQUIRE, '').replace(IMPORT_META_URL, "require('node:url').pathToFileURL(__filename).href");
    const out = transformSync(code, {
      filename,
      sourceMaps: 'inline',
      module: { type: 'commonjs' },
      jsc: {
        target: 'es2022',
        parser: isTs ? { syntax: 'typescript', decorators: true } : { syntax: 'ecmascript' },
        transform: isTs ? { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false } : {},
        keepClassNames: true,
      },
    });
    return { code: out.code, map: out.map };
  },
  getCacheKey(source, filename) {
    return require('node:crypto').createHash('sha1').update('v2\0' + filename + '\0' + source).digest('hex');
  },
};
