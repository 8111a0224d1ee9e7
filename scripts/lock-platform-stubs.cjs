#!/usr/bin/env node
'use strict';
/**
 * Keeps `npm ci` working from the registry this project's machines reach.
 *
 * That registry serves the Linux builds of packages with per-platform
 * optional binaries (@swc/core-*, @unrs/resolver-binding-*) but not the
 * others, so npm leaves those out of package-lock.json, and `npm ci` then
 * refuses the lock as "out of sync" ("Missing: @swc/core-darwin-arm64@").
 * This adds a lock entry (version, os, cpu, libc) for every optional
 * dependency the lock names but lacks; npm skips them on a platform they do
 * not match, and fetches them by version on one they do.
 *
 * Run after any `npm install` that rewrites package-lock.json:
 *   node scripts/lock-platform-stubs.cjs
 */
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const OSES = new Set(['darwin', 'linux', 'win32', 'android', 'freebsd', 'openharmony', 'netbsd', 'openbsd', 'sunos', 'aix']);
const CPUS = new Set(['arm64', 'x64', 'arm', 'ia32', 'ppc64', 's390x', 'loong64', 'riscv64', 'mips64el', 'wasm32']);

/** `…-linux-arm-musleabihf` → { os: ['linux'], cpu: ['arm'], libc: ['musl'] } */
function platformOf(name) {
  const tokens = name.split('/').pop().split('-');
  const at = tokens.findIndex((token) => OSES.has(token));
  if (at === -1 || !CPUS.has(tokens[at + 1])) return null;
  const platform = { os: [tokens[at]], cpu: [tokens[at + 1]] };
  const rest = tokens.slice(at + 2).join('-');
  if (tokens[at] === 'linux' && /musl/.test(rest)) platform.libc = ['musl'];
  else if (tokens[at] === 'linux' && /gnu/.test(rest)) platform.libc = ['glibc'];
  return platform;
}

const file = join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
const added = [];
for (const [path, entry] of Object.entries(packages)) {
  for (const [dep, range] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = path === '' ? 'node_modules' : `${path}/node_modules`;
    // resolution: nested first, then hoisted to the top
    if (packages[`${base}/${dep}`] || packages[`node_modules/${dep}`]) continue;
    const platform = platformOf(dep);
    if (!platform || !/^\d+\.\d+\.\d+/.test(range)) continue;
    const stub = { version: range, ...(entry.dev ? { dev: true } : {}), optional: true, ...platform };
    packages[`node_modules/${dep}`] = stub;
    added.push(`${dep}@${range}`);
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
process.stdout.write(added.length ? `added ${added.length} platform entries: ${added.join(', ')}\n` : 'lock complete: nothing to add\n');
