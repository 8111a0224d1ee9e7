import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import ts from 'typescript';

/**
 * Folder-level imports of src/: a folder that imports another which imports
 * it back (directly or around a loop) cannot be understood, tested or moved
 * alone. eslint's import/no-cycle sees files only; this reads every import
 * of src/ and libs/ with the TypeScript compiler's own pre-processor, finds
 * the strongly connected folders, and checks each import against the layers
 * the guide lists (docs/adding-a-module.md, "The layers").
 */
const ROOT = join(__dirname, '..');
const SRC = join(ROOT, 'src');
const LIBS = join(ROOT, 'libs');
const GUIDE = 'docs/adding-a-module.md';
const WAY_OUT =
  'move what both need into the lower folder (or libs/), or let the lower folder own an interface and an injection token the upper one provides (docs/adding-a-module.md, "The layers")';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, false).importedFiles.map((imported) => imported.fileName);
}

/** folder → folder → one import that makes the edge (file → imported path), for the message */
function folderGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(SRC)) {
    const from = relative(SRC, file).split(sep);
    if (from.length < 2) continue; // src/*.ts compose the app: above every folder
    for (const imported of importsOf(file)) {
      if (!imported.startsWith('.')) continue;
      const to = relative(SRC, normalize(join(dirname(file), imported))).split(sep);
      if (to[0] === '..' || to.length < 2 || to[0] === from[0]) continue;
      if (!graph.has(from[0])) graph.set(from[0], new Map());
      const edges = graph.get(from[0])!;
      if (!edges.has(to[0])) edges.set(to[0], `${relative(ROOT, file)} → ${imported}`);
    }
  }
  return graph;
}

/** Tarjan's strongly connected components of more than one folder: each is a cycle. */
function cycles(graph: Map<string, Map<string, string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (folder: string): void => {
    index.set(folder, next);
    low.set(folder, next++);
    stack.push(folder);
    for (const to of graph.get(folder)?.keys() ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(folder, Math.min(low.get(folder)!, low.get(to)!));
      } else if (stack.includes(to)) low.set(folder, Math.min(low.get(folder)!, index.get(to)!));
    }
    if (low.get(folder) !== index.get(folder)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      component.push(member);
    } while (member !== folder);
    if (component.length > 1) found.push(component.sort());
  };
  for (const folder of graph.keys()) if (!index.has(folder)) visit(folder);
  return found;
}

function describeCycle(graph: Map<string, Map<string, string>>, members: string[]): string {
  const inside = new Set(members);
  const edges = members.flatMap((from) => [...(graph.get(from) ?? [])].filter(([to]) => inside.has(to)).map(([to, via]) => `  ${from} → ${to}  (${via})`));
  return `${members.join(', ')}:\n${edges.join('\n')}`;
}

const RESOURCES = '<resource>';

/**
 * The guide's numbered list of layers: folder of src/ → its place (1 lowest).
 * `src/<resource>/` stands for every folder the list does not name.
 */
function guideLayers(): Map<string, number> {
  const lines = readFileSync(join(ROOT, GUIDE), 'utf8').split('\n');
  const start = lines.findIndex((line) => line.startsWith('**The layers.**'));
  const layers = new Map<string, number>();
  if (start === -1) return layers;
  let at = start + 1;
  while (at < lines.length && !/^\d+\. /.test(lines[at])) at++;
  for (; at < lines.length && /^\d+\. /.test(lines[at]); at++) {
    const place = Number(/^(\d+)\./.exec(lines[at])![1]);
    for (const [, folder] of lines[at].matchAll(/`src\/([^`/]+)\/`/g)) layers.set(folder, place);
  }
  return layers;
}

describe('folder-level imports of src/', () => {
  const graph = folderGraph();

  test('no folder imports another that imports it back, directly or around a loop', () => {
    const found = cycles(graph);
    expect({
      problem: found.length === 0 ? null : `these folders import each other around a loop: ${WAY_OUT}`,
      cycles: found.map((members) => describeCycle(graph, members)),
    }).toEqual({ problem: null, cycles: [] });
  });

  test(`every import goes down the layers listed in ${GUIDE}`, () => {
    const layers = guideLayers();
    // the list itself must parse: a guide rewritten into another shape would otherwise pass unchecked
    expect({ resources: layers.has(RESOURCES), common: layers.has('common'), database: layers.has('database') }).toEqual({ resources: true, common: true, database: true });
    const folders = readdirSync(SRC, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    const unknown = [...layers.keys()].filter((folder) => folder !== RESOURCES && !folders.includes(folder));
    const placeOf = (folder: string): number => layers.get(folder) ?? layers.get(RESOURCES)!;
    const upward: string[] = [];
    for (const [from, edges] of graph) {
      for (const [to, via] of edges) {
        const [fromPlace, toPlace] = [placeOf(from), placeOf(to)];
        // resource folders share a layer: the test above keeps them out of loops
        if (toPlace < fromPlace || (fromPlace === placeOf(RESOURCES) && toPlace === fromPlace)) continue;
        upward.push(`${from} (layer ${fromPlace}) imports ${to} (layer ${toPlace}): ${via}`);
      }
    }
    expect({
      unknown: unknown.map((folder) => `${GUIDE} lists src/${folder}/, which does not exist: correct the list`),
      upward,
      ...(upward.length > 0 ? { wayOut: `${WAY_OUT}; a folder placed wrongly moves in the list` } : {}),
    }).toEqual({ unknown: [], upward: [] });
  });

  test('libs/ stays framework-free: it imports neither src/ nor Nest', () => {
    const wrong = sourceFiles(LIBS).flatMap((file) =>
      importsOf(file)
        .filter((imported) => imported.startsWith('@nestjs/') || (imported.startsWith('.') && relative(LIBS, normalize(join(dirname(file), imported))).startsWith('..')))
        .map((imported) => `${relative(ROOT, file)} imports ${imported}: libs/ is below src/ and free of the framework; pass what it needs as arguments`),
    );
    expect(wrong).toEqual([]);
  });
});
