import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type TestAgent from 'supertest/lib/agent';

/**
 * Records the (method, path, status) of every response an e2e test gets
 * through the shared HTTP helper, so that test/support/global-teardown.ts can
 * check each status against the operation's documented responses in the
 * served document (every status an operation answers is documented on it). Each Jest worker appends to its own file in the run's directory
 * (`STATUS_RECORD_DIR`, made by the global setup): no locking, no lost lines.
 */
export const STATUS_RECORD_DIR_ENV = 'STATUS_RECORD_DIR';
const DOCUMENT_FILE = 'openapi.json';

export interface StatusRecord {
  method: string;
  /** request path, query string removed */
  path: string;
  status: number;
  /** the JSON body, for the check of answers against their documented schema (test/support/response-shapes.ts) */
  body?: unknown;
  /** the test file that made the request */
  file: string;
}

const METHODS: Record<string, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', delete: 'DELETE', del: 'DELETE', head: 'HEAD', options: 'OPTIONS' };

function recordDir(): string | null {
  const dir = process.env[STATUS_RECORD_DIR_ENV];
  return dir && existsSync(dir) ? dir : null;
}

export function recordStatus(record: Omit<StatusRecord, 'file'>): void {
  const dir = recordDir();
  if (!dir) return;
  const file = (expect.getState?.().testPath ?? '').replace(`${process.cwd()}/`, '');
  const line = JSON.stringify({ ...record, path: record.path.split('?')[0], file });
  // a large body (a long conversation) adds little to the field check and much to the files
  appendFileSync(join(dir, `statuses-${process.pid}.jsonl`), `${line.length > MAX_RECORDED_LINE ? JSON.stringify({ ...record, body: undefined, path: record.path.split('?')[0], file }) : line}\n`);
}

const MAX_RECORDED_LINE = 64 * 1024;

/** The served document, written once per run (atomically: workers may race) for the teardown's check. */
export function recordDocument(document: unknown): void {
  const dir = recordDir();
  if (!dir || existsSync(join(dir, DOCUMENT_FILE))) return;
  const temp = join(dir, `${DOCUMENT_FILE}.${process.pid}.tmp`);
  writeFileSync(temp, JSON.stringify(document));
  renameSync(temp, join(dir, DOCUMENT_FILE));
}

interface RecordedResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string | undefined>;
}

function jsonBody(res: RecordedResponse): unknown {
  return res.status >= 200 && res.status < 300 && (res.headers?.['content-type'] ?? '').startsWith('application/json') ? res.body : undefined;
}

/** A supertest agent whose every response is recorded. */
export function recordingAgent(agent: TestAgent): TestAgent {
  return new Proxy(agent, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      const method = typeof property === 'string' ? METHODS[property] : undefined;
      if (!method || typeof value !== 'function') return value;
      return (url: string, ...rest: unknown[]) => {
        const test = (value as (...args: unknown[]) => { on(event: string, listener: (res: RecordedResponse) => void): unknown }).call(target, url, ...rest);
        test.on('response', (res) => recordStatus({ method, path: url, status: res.status, body: jsonBody(res) }));
        return test;
      };
    },
  });
}

export function readRecords(dir: string): { records: StatusRecord[]; document: unknown } {
  const records: StatusRecord[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.startsWith('statuses-')) continue;
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) if (line !== '') records.push(JSON.parse(line) as StatusRecord);
  }
  const path = join(dir, DOCUMENT_FILE);
  return { records, document: existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : null };
}
