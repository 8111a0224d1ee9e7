/**
 * @jest-config-loader ts-node
 * @jest-config-loader-options {"transpileOnly": true}
 */
// ts-node, not Node's own type stripping: that needs `./jest.config.ts` with its extension
import type { Config } from 'jest';
import base, { PROCESS_SUITES } from './jest.config';

// `npm run test:processes`: the suites that run the built server, the CLI or
// a browser as processes of their own (see PROCESS_SUITES).
const config: Config = {
  ...base,
  testMatch: PROCESS_SUITES.map((file) => `<rootDir>/${file}`),
  testPathIgnorePatterns: ['/node_modules/'],
};

export default config;
