/** @jest-config-loader-options {"transpileOnly": true} */
import type { Config } from 'jest';

// Our TypeScript is CommonJS (like the build); NestJS 12 and other ESM-only
// packages in node_modules are loaded as they ship, through Jest's require(esm)
// support (Node >= 24.9 with --experimental-vm-modules). Nothing in
// node_modules is transformed. Type-checking is `npm run typecheck`.
/**
 * End-to-end suites that run the built server, the CLI, a browser or the
 * packed SDK as separate processes: most of the suite's time for a few files. They run in
 * `npm run test:processes` (and CI), not in the everyday `npm test`.
 */
export const PROCESS_SUITES = ['test/cli.e2e-spec.ts', 'test/server.e2e-spec.ts', 'test/server-limits.e2e-spec.ts', 'test/docs.e2e-spec.ts', 'test/sdk-package.e2e-spec.ts'];

const config: Config = {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...PROCESS_SUITES.map((file) => `<rootDir>/${file}`)],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        sourceMaps: 'inline',
        module: { type: 'commonjs' },
        jsc: {
          target: 'es2022',
          parser: { syntax: 'typescript', decorators: true },
          // Nest's dependency injection reads the constructor parameter types
          transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
          keepClassNames: true,
        },
      },
    ],
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  // fails the run when a status the suite saw is not documented on its operation
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // a bound for a hung test, not a speed check: generous, so a loaded machine
  // (app start-up, PGlite, spawned processes) does not fail a correct test
  testTimeout: 120_000,
  // one worker per core: the suite spends much of its time waiting on PGlite,
  // spawned servers and child processes, and Jest's default leaves a core idle
  maxWorkers: '100%',
};

export default config;
