import type { INestApplication } from '@nestjs/common';
import { spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { MetricsServer } from '../../src/metrics/metrics.server';

/**
 * Test helpers for the Prometheus text exposition: a strict parser (every
 * line must be a comment, a blank line or a well-formed sample of a family
 * announced by # TYPE) and Prometheus's own linter, `promtool check metrics`.
 */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] };

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let at = 0;
  while (at < text.length) {
    const eq = text.indexOf('=', at);
    if (eq === -1) throw new Error(`bad labels in: ${line}`);
    const name = text.slice(at, eq).trim();
    if (!LABEL_NAME.test(name) || name in labels) throw new Error(`bad label name "${name}" in: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value in: ${line}`);
    let value = '';
    let i = eq + 2;
    for (; i < text.length && text[i] !== '"'; i++) {
      if (text[i] === '\\') {
        const next = text[++i];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`bad escape in: ${line}`);
      } else value += text[i];
    }
    if (text[i] !== '"') throw new Error(`unterminated label value in: ${line}`);
    labels[name] = value;
    at = i + 1;
    if (text[at] === ',') at++;
    else if (at < text.length) throw new Error(`expected "," in: ${line}`);
  }
  return labels;
}

function familyOf(name: string, types: Map<string, string>): string | null {
  if (types.has(name)) return name;
  for (const [family, type] of types) {
    for (const suffix of SUFFIXES[type] ?? []) if (name === family + suffix) return family;
  }
  return null;
}

/**
 * A sample value as Prometheus reads it (Go's ParseFloat): a number, or
 * NaN / Inf in any case (prom-client writes an empty event-loop histogram's mean as "Nan").
 */
function parseValue(raw: string): number | null {
  if (/^nan$/i.test(raw)) return NaN;
  const inf = /^([+-]?)inf(inity)?$/i.exec(raw);
  if (inf) return inf[1] === '-' ? -Infinity : Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) return null;
  return Number(raw);
}

/** Parses the whole exposition or throws naming the first line that is not valid. */
export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const typeMatch = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (typeMatch) {
        if (!METRIC_NAME.test(typeMatch[1]) || !TYPES.has(typeMatch[2]) || types.has(typeMatch[1])) throw new Error(`bad TYPE line: ${line}`);
        types.set(typeMatch[1], typeMatch[2]);
      } else if (!/^# HELP \S+ .*$/.test(line)) throw new Error(`bad comment line: ${line}`);
      continue;
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line);
    if (!match) throw new Error(`bad sample line: ${line}`);
    const [, name, labelText, rawValue] = match;
    if (!familyOf(name, types)) throw new Error(`sample of a family without # TYPE: ${line}`);
    const value = parseValue(rawValue);
    if (value === null) throw new Error(`bad value in: ${line}`);
    samples.push({ name, labels: labelText ? parseLabels(labelText, line) : {}, value });
  }
  return { types, samples };
}

/** The value of the one sample with this name whose labels include `labels`; 0 when absent (a series not yet created). */
export function sampleValue(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  const matches = exposition.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (matches.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${matches.length} samples`);
  return matches[0]?.value ?? 0;
}

/**
 * What promtool's linter says of prom-client's default Node.js metrics (gauges
 * named *_total by prom-client, which the service cannot rename). Anything
 * else promtool reports fails the check.
 */
const KNOWN_DEFAULT_METRIC_LINT = [
  'nodejs_active_handles_total non-counter metrics should not have "_total" suffix',
  'nodejs_active_requests_total non-counter metrics should not have "_total" suffix',
  'nodejs_active_resources_total non-counter metrics should not have "_total" suffix',
];

type PromtoolResult = { available: false } | { available: true; status: number; problems: string[] };

/** Runs `promtool check metrics` on the exposition. */
function promtoolCheck(text: string): PromtoolResult {
  const result = spawnSync(process.env.PROMTOOL ?? 'promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 20_000 });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return { available: false };
  if (result.error) throw result.error;
  const problems = `${result.stdout}\n${result.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return { available: true, status: result.status ?? -1, problems };
}

/**
 * Asserts promtool parses the exposition and lints it clean but for the known
 * default-metric notes. Without promtool it fails in CI (`.ci/run` installs
 * it) and elsewhere returns false so the caller can say it was not run.
 */
export function expectPromtoolAccepts(text: string): boolean {
  const result = promtoolCheck(text);
  if (!result.available) {
    if (process.env.CI) throw new Error('promtool is missing: CI must install it (Debian package "prometheus"; .ci/run does)');
    console.log('promtool check skipped: promtool is not installed (apt-get install prometheus)');
    return false;
  }
  // exit 1: not parseable; exit 3: lint problems only
  const unexpected = result.problems.filter((p) => !KNOWN_DEFAULT_METRIC_LINT.includes(p));
  if (unexpected.length > 0 || (result.status !== 0 && result.status !== 3)) {
    throw new Error(`promtool check metrics exited ${result.status}:\n${result.problems.join('\n')}`);
  }
  return true;
}

/** GET /metrics from the app's metrics port, as Prometheus scrapes it (rejects on a status other than 200). */
export function scrapeMetricsText(app: INestApplication): Promise<string> {
  const { port } = app.get(MetricsServer).address()!;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET /metrics answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The app's metrics, parsed. */
export async function scrapeMetrics(app: INestApplication): Promise<Exposition> {
  return parseExposition(await scrapeMetricsText(app));
}
