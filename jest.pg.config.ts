/**
 * @jest-config-loader ts-node
 * @jest-config-loader-options {"transpileOnly": true}
 */
// ts-node, not Node's own type stripping: that needs `./jest.config.ts` with its extension
import type { Config } from 'jest';
import base from './jest.config';

// `npm run test:pg`: the whole e2e suite on a PostgreSQL server (DATABASE_URL),
// plus the tests that only make sense there (test/pg/*.pg-spec.ts: faults,
// several instances), which start clusters and servers of their own.
const config: Config = {
  ...base,
  testMatch: ['<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/test/pg/**/*.pg-spec.ts'],
  // every e2e suite, the process suites included, but the packed SDK's: nothing
  // in it depends on the engine (the SDK's behaviour is test/sdk.e2e-spec.ts, run here)
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/sdk-package.e2e-spec.ts'],
  testTimeout: 180_000,
};

export default config;
