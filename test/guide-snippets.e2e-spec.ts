import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import ts from 'typescript';

/**
 * docs/adding-a-module.md cannot drift from the code: every ```ts block is
 * compiled against the real sources, and every file it names exists.
 *
 * A block's first line names the file it belongs to:
 * - `// src/widgets/widgets.service.ts`: appended to that file (blocks of one
 *   file join in the guide's order; a file that exists, such as
 *   `src/database/orgs.table.ts`, gets them after its real text);
 * - `// src/widgets/widgets.repository.ts, in class WidgetsRepository`: the
 *   block's leading imports go to the top of the file, its members at the end
 *   of that class;
 * - `// src/widgets/widgets.service.ts, whole file`: replaces what earlier
 *   blocks wrote there.
 * The read-only walkthrough is checked as `src/widgets/`; the writable part
 * ("A writable resource with PATCH") grows a copy of it, checked as
 * `src/widgets-writable/`, so both stay true. The one-line edits the guide
 * describes in prose (the scopes, a plan cap) are made to in-memory copies
 * of the real files. Nothing is written to the tree: a compiler host serves
 * these files from memory in front of the disk, and one program checks them.
 */
const ROOT = resolve(__dirname, '..');
const GUIDE = 'docs/adding-a-module.md';
const guide = readFileSync(join(ROOT, GUIDE), 'utf8');
const WRITABLE_PART = '## A writable resource with PATCH';
const HEADER = /^\/\/ ((?:src|libs|test)\/[\w./-]+\.ts)(?:, in class (\w+)|, (whole file))?\s*$/;

/** What the guide says in prose (step 3, a plan cap), made to the real file: [file, anchor, text added after it]. */
const PROSE_EDITS: Array<[string, string, string]> = [
  ['src/auth/scopes.ts', 'export const SCOPES = [', "\n  'widgets:read',\n  'widgets:write',\n  'widgets:delete',"],
  // "A new cap is a field in five places"; the other four are in real files this test does not report on
  ['src/database/orgs.table.ts', 'export interface OrgLimits {', '\n  widgets: number | null;'],
];

interface Snippet {
  heading: string;
  /** 1-based line of the guide where the block's code starts */
  line: number;
  code: string;
  writable: boolean;
}

function snippets(): Snippet[] {
  const found: Snippet[] = [];
  const lines = guide.split('\n');
  let heading = '(top)';
  let writable = false;
  for (let i = 0; i < lines.length; i++) {
    if (/^#{1,6} /.test(lines[i])) heading = lines[i].replace(/^#+ /, '');
    if (lines[i].startsWith(WRITABLE_PART)) writable = true;
    if (lines[i].trim() !== '```ts') continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end].trim() !== '```') end++;
    found.push({ heading, line: start + 1, code: lines.slice(start, end).join('\n'), writable });
    i = end;
  }
  return found;
}

function where(snippet: Snippet, offset = 0): string {
  return `${GUIDE}:${snippet.line + offset} (the ts block under "${snippet.heading}")`;
}

/** A file being assembled: its text, and which guide block each stretch of lines came from. */
class VirtualFile {
  parts: { from: number; count: number; snippet: Snippet; first: number }[] = [];
  constructor(public text: string) {}

  static of(path: string): VirtualFile {
    return new VirtualFile(existsSync(path) ? `${readFileSync(path, 'utf8')}\n` : '');
  }

  copy(): VirtualFile {
    const copy = new VirtualFile(this.text);
    copy.parts = this.parts.map((part) => ({ ...part }));
    return copy;
  }

  append(snippet: Snippet): void {
    this.insertAt(this.text.split('\n').length - 1, snippet, snippet.code.split('\n'), 0);
  }

  /** The block's leading imports go to the top of the file, the rest at the end of the class; false when the class is not there. */
  addToClass(name: string, snippet: Snippet): boolean {
    const source = ts.createSourceFile('x.ts', this.text, ts.ScriptTarget.Latest);
    const found = source.statements.find((node): node is ts.ClassDeclaration => ts.isClassDeclaration(node) && node.name?.text === name);
    if (!found) return false;
    const lines = snippet.code.split('\n');
    let members = 1;
    while (members < lines.length && /^(import |\s*$)/.test(lines[members])) members++;
    this.insertAt(source.getLineAndCharacterOfPosition(found.end).line, snippet, lines.slice(members), members);
    this.insertAt(0, snippet, lines.slice(0, members), 0);
    return true;
  }

  /** `lines` (from line `first` of the block) go before line `at` (0-based); what was after it moves down. */
  private insertAt(at: number, snippet: Snippet, lines: string[], first: number): void {
    const text = this.text.split('\n');
    text.splice(at, 0, ...lines);
    this.text = text.join('\n');
    for (const part of this.parts) if (part.from >= at) part.from += lines.length;
    this.parts.push({ from: at, count: lines.length, snippet, first });
  }

  blockAt(line: number): { snippet: Snippet; offset: number } | null {
    const part = this.parts.find((candidate) => line >= candidate.from && line < candidate.from + candidate.count);
    return part ? { snippet: part.snippet, offset: part.first + line - part.from } : null;
  }
}

describe('docs/adding-a-module.md: every code block compiles against the real code', () => {
  const blocks = snippets();

  test('every ts block names the file it belongs to on its first line', () => {
    expect(blocks.length).toBeGreaterThan(5);
    const unnamed = blocks.filter((block) => !HEADER.test(block.code.split('\n')[0]));
    expect(
      unnamed.map(
        (block) =>
          `${where(block)}: start it with a comment naming its file ("// src/widgets/widgets.service.ts", optionally ", in class WidgetsService" or ", whole file"), or replace it by a pointer to a real file`,
      ),
    ).toEqual([]);
  });

  test('every ts block type-checks where it says it lives', () => {
    const problems: string[] = [];
    const files = new Map<string, VirtualFile>();
    for (const [path, anchor, added] of PROSE_EDITS) {
      const file = VirtualFile.of(join(ROOT, path));
      if (!file.text.includes(anchor)) problems.push(`${path} no longer has "${anchor}": update PROSE_EDITS in this test to what the guide says`);
      file.text = file.text.replace(anchor, anchor + added);
      files.set(join(ROOT, path), file);
    }
    const place = (block: Snippet, relative: string, inClass: string | undefined, wholeFile: boolean): void => {
      const path = join(ROOT, relative);
      if (wholeFile || !files.has(path)) files.set(path, wholeFile ? new VirtualFile('') : VirtualFile.of(path));
      const file = files.get(path)!;
      if (!inClass) file.append(block);
      else if (!file.addToClass(inClass, block)) problems.push(`${where(block)}: ${relative} has no class ${inClass} for this block to go in`);
    };
    const readOnly = blocks.filter((block) => !block.writable);
    const writable = blocks.filter((block) => block.writable);
    for (const block of readOnly) {
      const match = HEADER.exec(block.code.split('\n')[0]);
      if (match) place(block, match[1], match[2], match[3] !== undefined); // else the test above names it
    }
    // the writable part grows a copy of the read-only module
    for (const [path, file] of [...files]) {
      if (path.startsWith(join(ROOT, 'src/widgets/'))) files.set(path.replace('/src/widgets/', '/src/widgets-writable/'), file.copy());
    }
    for (const block of writable) {
      const match = HEADER.exec(block.code.split('\n')[0]);
      if (match) place(block, match[1].replace(/^src\/widgets\//, 'src/widgets-writable/'), match[2], match[3] !== undefined);
    }

    const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), { noEmit: true }, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    })!;
    const host = ts.createCompilerHost(config.options);
    const fromDisk = { fileExists: host.fileExists.bind(host), readFile: host.readFile.bind(host), getSourceFile: host.getSourceFile.bind(host) };
    const folders = new Set([...files.keys()].map((path) => dirname(path)));
    const directoryExists = host.directoryExists?.bind(host);
    host.fileExists = (name) => files.has(resolve(name)) || fromDisk.fileExists(name);
    host.directoryExists = (name) => folders.has(resolve(name)) || (directoryExists ? directoryExists(name) : ts.sys.directoryExists(name));
    host.readFile = (name) => files.get(resolve(name))?.text ?? fromDisk.readFile(name);
    host.getSourceFile = (name, language, ...rest) => {
      const file = files.get(resolve(name));
      return file ? ts.createSourceFile(name, file.text, language) : fromDisk.getSourceFile(name, language, ...rest);
    };
    const program = ts.createProgram({ rootNames: [...files.keys()], options: config.options, host });

    for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
      const file = diagnostic.file && files.get(resolve(diagnostic.file.fileName));
      if (!file || diagnostic.start === undefined) continue;
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start);
      const block = file.blockAt(line);
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
      const problem = block ? `${where(block.snippet, block.offset)}: ${message}` : `${diagnostic.file!.fileName}:${line + 1} (real code the guide's blocks change): ${message}`;
      // a read-only block copied into the writable module reports the same problem twice
      if (!problems.includes(problem)) problems.push(problem);
    }
    if (problems.length > 0) {
      problems.push('→ make each block compile as the code to write (or change the code it names); a block that can only be partial becomes a pointer to a real file');
    }
    expect(problems).toEqual([]);
    // one program over much of src/ and its libraries' types: seconds, more on a busy machine; a bound for a hang only
  }, 600_000);
});

describe('docs/adding-a-module.md: every file it names exists', () => {
  test('every backticked src/, libs/, test/ or docs/ path is in the repository', () => {
    const missing: string[] = [];
    guide.split('\n').forEach((text, index) => {
      for (const [, path] of text.matchAll(/`((?:src|libs|test|docs)\/[^`\s]*)`/g)) {
        // the example resource and the per-resource templates name files a new module adds
        if (/widget|<resource>|\*/.test(path)) continue;
        if (!existsSync(join(ROOT, path))) missing.push(`${GUIDE}:${index + 1} names ${path}, which does not exist: correct the path or the text`);
      }
    });
    expect(missing).toEqual([]);
  });

  test('every backticked file name without a folder (`chatbots.mapper.ts`) is a file at the top of the repository or in src/, libs/ or test/', () => {
    const names = new Set([
      ...readdirSync(ROOT),
      ...['src', 'libs', 'test'].flatMap((folder) => readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' }).map((path) => basename(path))),
    ]);
    const missing: string[] = [];
    guide.split('\n').forEach((text, index) => {
      for (const [, name] of text.matchAll(/`([\w.-]+\.(?:ts|json))`/g)) {
        if (/widget|<resource>/.test(name)) continue;
        if (!names.has(name)) missing.push(`${GUIDE}:${index + 1} names ${name}, which is no file of the root, src/, libs/ or test/: correct the name or the text`);
      }
    });
    expect(missing).toEqual([]);
  });
});
