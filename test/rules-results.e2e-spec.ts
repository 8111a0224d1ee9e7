import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * Every rule of a `<resource>.rules.ts` answers the one way the guide shows
 * (docs/adding-a-module.md, "Rules live in `<resource>.rules.ts`"): it
 * returns `Checked<T>` of `src/common/field-errors.ts`, and the service takes
 * it with `accepted`. A function that cannot refuse returns the value it
 * derives. So an exported function fails here when it returns a refusal of
 * its own (`FieldErrors`, an `ApiError`, an object with `ok`, `fields` or
 * `problems`), `void` (it would throw or change its arguments) or a Promise
 * (a rule is pure: a guard that reads the database is the service's), and a
 * rules file fails on any `throw`. The types are the compiler's, so an alias
 * or an inferred return type is judged by what it is.
 */
const ROOT = resolve(__dirname, '..');
const CHECKED_HOME = join(ROOT, 'src/common/field-errors.ts');
/** A rules file the test writes in memory to prove it refuses each way out (never on disk). */
const PROBE = join(ROOT, 'src/rules-probe/probe.rules.ts');
const PROBE_TEXT = `
import { ApiError, type FieldErrors } from '../common/api-error';
import { refused, type Checked } from '../common/field-errors';

export const LIMIT = 3;
export function judged(x: number): Checked<number> {
  return x > 0 ? { ok: true, value: x } : refused({ x: ['must be positive'] });
}
export const derived = (x: number): number => x * 2;
export function throwing(x: number): number {
  if (x < 0) throw ApiError.field('x', 'must not be negative');
  return x;
}
export function mutating(into: { x?: number }): void {
  into.x = 1;
}
export async function counting(count: () => Promise<number>): Promise<Checked<void>> {
  return (await count()) > LIMIT ? refused({ x: ['too many'] }) : { ok: true, value: undefined };
}
export function bareFields(): FieldErrors {
  return {};
}
export function ownResult(x: number) {
  return x > 0 ? { ok: true as const, row: x } : { ok: false as const, problems: ['x'] };
}
export function answer(): ApiError {
  return ApiError.field('x', 'bad');
}
`;

function rulesFiles(): string[] {
  return (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[])
    .filter((path) => path.endsWith('.rules.ts'))
    .map((path) => join(ROOT, 'src', path))
    .sort();
}

function program(files: string[]): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  if (!config) throw new Error('tsconfig.json could not be read');
  const host = ts.createCompilerHost(config.options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => name === PROBE || fileExists(name);
  host.readFile = (name) => (name === PROBE ? PROBE_TEXT : readFile(name));
  host.getSourceFile = (name, language, ...rest) =>
    name === PROBE ? ts.createSourceFile(name, PROBE_TEXT, language, true) : getSourceFile(name, language, ...rest);
  return ts.createProgram({ rootNames: [...files, PROBE], options: { ...config.options, noEmit: true }, host });
}

/** Why a return type is not a rule's answer, or null when it is. */
function wrongReturn(type: ts.Type, checker: ts.TypeChecker): string | null {
  const alias = type.aliasSymbol;
  if (alias?.name === 'Checked' && alias.declarations?.some((d) => d.getSourceFile().fileName === CHECKED_HOME)) return null;
  if (type.flags & (ts.TypeFlags.Void | ts.TypeFlags.Undefined)) return 'returns void: a rule returns what it decides and changes none of its arguments';
  if (type.getSymbol()?.name === 'Promise') return 'returns a Promise: a rule is pure and synchronous; a guard that reads the database belongs to the service';
  const byField = checker.getIndexInfosOfType(type).some((info) => info.keyType.flags & ts.TypeFlags.String && checker.isArrayType(info.type));
  if (alias?.name === 'FieldErrors' || byField) return 'returns bare field errors';
  for (const part of type.isUnion() ? type.types : [type]) {
    if (part.getSymbol()?.name === 'ApiError' || checker.getPropertyOfType(part, 'stack')) return 'returns an error';
    const own = ['ok', 'fields', 'problems'].find((name) => checker.getPropertyOfType(part, name));
    if (own) return `returns a result of its own (it has \`${own}\`)`;
  }
  return null;
}

/** file:line: what is wrong, for every exported function and every `throw` of the given rules files. */
function findings(files: string[]): { found: string[]; judged: number } {
  const built = program(files);
  const checker = built.getTypeChecker();
  const found: string[] = [];
  let judged = 0;
  for (const file of files) {
    const source = built.getSourceFile(file);
    if (!source) throw new Error(`${file} is not in the program`);
    const at = (node: ts.Node) => `${relative(ROOT, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: ts.Node): void => {
      if (ts.isThrowStatement(node)) found.push(`${at(node)}: throws: a rule returns its refusal, refused(fields, answer?), and the service throws it with accepted()`);
      ts.forEachChild(node, visit);
    };
    visit(source);
    const module = checker.getSymbolAtLocation(source);
    for (const symbol of module ? checker.getExportsOfModule(module) : []) {
      const declaration = symbol.valueDeclaration;
      if (!declaration) continue;
      for (const signature of checker.getTypeOfSymbolAtLocation(symbol, declaration).getCallSignatures()) {
        judged++;
        const problem = wrongReturn(checker.getReturnTypeOfSignature(signature), checker);
        if (problem) found.push(`${at(declaration)}: ${symbol.name} ${problem}. Return Checked<T> of src/common/field-errors.ts (the value, or refused(fields, answer?)), as docs/adding-a-module.md shows`);
      }
    }
  }
  return { found, judged };
}

const real = rulesFiles();
const results = findings([...real, PROBE]);
const ofProbe = results.found.filter((line) => line.startsWith(relative(ROOT, PROBE)));
const ofReal = results.found.filter((line) => !ofProbe.includes(line));

describe('rules files: one result type', () => {
  it('finds the rules files and their exported functions', () => {
    expect(real.map((file) => relative(ROOT, file))).toEqual(expect.arrayContaining(['src/agents/agents.rules.ts', 'src/custom-tools/custom-tools.rules.ts', 'src/sources/sources.rules.ts']));
    expect(results.judged).toBeGreaterThan(20);
    expect(readFileSync(CHECKED_HOME, 'utf8')).toContain('export type Checked<');
  });

  it('every exported function of a rules file returns Checked<T> or a value it derives, and none throws', () => {
    expect(ofReal).toEqual([]);
  });

  it('refuses each other answer: a throw, void, a Promise, bare field errors, a result of its own, an error', () => {
    const named = (name: string) => ofProbe.filter((line) => line.includes(`: ${name} `)).length;
    expect(ofProbe.filter((line) => line.includes(': throws:'))).toHaveLength(1);
    for (const name of ['mutating', 'counting', 'bareFields', 'ownResult', 'answer']) expect([name, named(name)]).toEqual([name, 1]);
    for (const name of ['judged', 'derived', 'throwing']) expect([name, named(name)]).toEqual([name, 0]);
    expect(ofProbe).toHaveLength(6);
  });
});
