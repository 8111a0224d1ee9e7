import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `node dist/bench/profile-summary.js <dir> [requests]`: reads the .cpuprofile
 * files `BENCH_PROFILE=<dir> npm run bench` wrote and prints where the CPU
 * went, by package (self time of every function, attributed by its file):
 * node_modules packages by name, the app's own code, Node's internals, GC.
 * With the number of requests served, also µs per request. Samples before
 * the first request (start-up) are left out.
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function packageOf(node: Node): string {
  const { url, functionName } = node.callFrame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return '(idle)';
  if (functionName === '(program)') return '(program: native, not attributed)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith('wasm://')) return '@electric-sql/pglite';
  if (/\/dist\/(src|libs)\//.test(url) || /\/(src|libs)\/.*\.ts$/.test(url)) return 'our code';
  if (url.startsWith('node:') || url === '') return functionName ? 'node (internals, streams, net, builtins)' : '(native)';
  return url;
}

function main(): void {
  const dir = process.argv[2];
  const counted = join(dir, 'requests.txt');
  const requests = Number(process.argv[3] ?? (existsSync(counted) ? readFileSync(counted, 'utf8') : NaN));
  const totals = new Map<string, number>();
  let all = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    // from the first request on (Node's HTTP server's first sample): start-up is not the request path
    const first = profile.samples.findIndex((id) => byId.get(id)!.callFrame.url === 'node:_http_server');
    profile.samples.forEach((id, i) => {
      if (i < first) return;
      const pkg = packageOf(byId.get(id)!);
      const dt = profile.timeDeltas[i] ?? 0;
      totals.set(pkg, (totals.get(pkg) ?? 0) + dt);
      all += dt;
    });
  }
  const busy = all - (totals.get('(idle)') ?? 0);
  console.log(`| package | share of busy CPU | ${Number.isNaN(requests) ? 'ms' : 'µs per request'} |`);
  console.log('|---|---|---|');
  for (const [pkg, us] of [...totals].sort((a, b) => b[1] - a[1])) {
    if (pkg === '(idle)') continue;
    console.log(`| ${pkg} | ${((100 * us) / busy).toFixed(1)} % | ${Number.isNaN(requests) ? (us / 1000).toFixed(0) : (us / requests).toFixed(0)} |`);
  }
}

main();
