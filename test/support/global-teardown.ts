import { rmSync } from 'node:fs';
import { responseShapeProblems } from './response-shapes';
import { readRecords, STATUS_RECORD_DIR_ENV, type StatusRecord } from './status-recorder';

type Document = { servers?: Array<{ url: string }>; paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };

/** `/agents/{id}` → a RegExp matching one concrete path segment per parameter. */
function templateRegExp(template: string): RegExp {
  const escaped = template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('[^/]+')}$`);
}

/**
 * Every status an operation answered anywhere in the e2e suite must be
 * documented on that operation in the served document. The
 * responses come from the recorder every test app's HTTP helper passes
 * through (test/support/status-recorder.ts), one file per Jest worker.
 * Requests that match no operation (wrong URLs, test-only routes, /docs)
 * are not operations of the API and are left out.
 */
/** The operation of the document a recorded request went to, or null (wrong URLs, test-only routes, /docs). */
function operationMatcher(document: Document): (record: StatusRecord) => { template: string; method: string } | null {
  const prefix = document.servers?.[0]?.url ?? '';
  const templates = Object.keys(document.paths)
    // literal paths before templated ones, so `/agents` never matches `/{x}`
    .sort((a, b) => a.split('{').length - b.split('{').length)
    .map((template) => ({ template, pattern: templateRegExp(template) }));
  return (record) => {
    if (!record.path.startsWith(`${prefix}/`) && record.path !== prefix) return null;
    const relative = record.path.slice(prefix.length) || '/';
    const method = record.method.toLowerCase();
    const match = templates.find(({ template, pattern }) => pattern.test(relative) && document.paths[template][method]);
    return match ? { template: match.template, method } : null;
  };
}

export function undocumentedStatuses(records: StatusRecord[], document: Document): string[] {
  const operationOf = operationMatcher(document);
  const problems = new Map<string, Set<string>>();
  for (const record of records) {
    const match = operationOf(record);
    if (!match) continue;
    const operation = document.paths[match.template][match.method];
    const responses = operation.responses ?? {};
    const status = String(record.status);
    if (status in responses || `${status[0]}XX` in responses || 'default' in responses) continue;
    const key = `${record.method} ${match.template} → ${status}`;
    (problems.get(key) ?? problems.set(key, new Set()).get(key)!).add(record.file);
  }
  return [...problems].map(([key, files]) => `${key} (answered in ${[...files].sort().join(', ')})`).sort();
}

export default function globalTeardown(): void {
  const dir = process.env[STATUS_RECORD_DIR_ENV];
  if (!dir) return;
  try {
    const { records, document } = readRecords(dir);
    if (!document || records.length === 0) return;
    const problems = undocumentedStatuses(records, document as Document);
    if (problems.length > 0) {
      throw new Error(
        `Statuses the service answered that the served OpenAPI document does not document on the operation (${problems.length}):\n  ${problems.join('\n  ')}`,
      );
    }
    const shapes = responseShapeProblems(records, document as never, operationMatcher(document as Document));
    if (shapes.length > 0) {
      throw new Error(
        `Answers whose fields disagree with the required fields of their documented schema (${shapes.length}); ` +
          `fix the schema (src/meta/openapi-responses.ts, MAY_BE_ABSENT) or the mapper:\n  ${shapes.join('\n  ')}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
