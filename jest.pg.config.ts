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
  // every e2e suite, the process suites included
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 180_000,
};

export default config;
