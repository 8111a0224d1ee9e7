import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

let cached: string | null = null;

/**
 * The directory holding package.json. Code runs from src/ (jest) and from
 * dist/src/ (the built server and CLI); files that ship beside the sources
 * (migrations, demo fixtures) are resolved from here so both work.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package root not found');
    dir = parent;
  }
  cached = dir;
  return dir;
}
