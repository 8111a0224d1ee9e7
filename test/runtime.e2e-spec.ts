import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The project runs on one pinned Node.js line: the `node` package in
 * devDependencies puts that binary first on npm scripts' PATH, so `npm test`,
 * `npm start`, CI and the bench run on it whatever Node the machine has.
 * `engines`, `@types/node` and the README name the same line.
 */
const ROOT = join(__dirname, '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};
const pinned = pkg.devDependencies.node;
const major = (version: string) => Number(/^\D*(\d+)\./.exec(version)?.[1]);

describe('the pinned runtime', () => {
  test('the node package is pinned to one exact release', () => {
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
  });

  test('this suite runs on it (npm scripts find the pinned binary first)', () => {
    expect(process.version).toBe(`v${pinned}`);
  });

  test('engines, @types/node and the README name the same line', () => {
    expect(pkg.engines.node).toBe(`^${pinned}`);
    expect(major(pkg.devDependencies['@types/node'])).toBe(major(pinned));
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`Node.js ${pinned}`);
  });
});
