/**
 * Log lines that carry a query's text or its parameters: drizzle's error
 * message ("Failed query: … params: …"), a `params` field, or SQL itself.
 * The fault suites grep every line they produced with it: no log line may
 * carry either (a parameter may be a secret, the text helps an attacker).
 */
export function linesWithQueryText(output: string | string[]): string[] {
  const lines = (Array.isArray(output) ? output.join('') : output).split('\n');
  const sql = /\b(select\b.+\bfrom|insert\s+into|update\s+"?\w+"?\s+set|delete\s+from)\b/i;
  return lines.filter((line) => /Failed query|"params"|params:/i.test(line) || sql.test(line));
}
