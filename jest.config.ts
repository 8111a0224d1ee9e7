/** @jest-config-loader-options {"transpileOnly": true} */
import type { Config } from 'jest';

// NestJS 12 ships ESM only; test/swc-transform.js compiles it (and our
// TypeScript) to CommonJS for Jest. Type-checking is `npm run typecheck`.
const config: Config = {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: { '^.+\\.(t|j)s$': '<rootDir>/test/swc-transform.js' },
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  // fails the run when a status the suite saw is not documented on its operation
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30_000,
  maxWorkers: process.env.CI ? 2 : '50%',
};

export default config;
