import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod, type Type } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { idKinds, type IdKind } from '../libs/ids/ids';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from '../src/auth/auth.decorators';
import { SCOPES } from '../src/auth/scopes';
import { idPattern } from '../src/common/input-bounds';
import { FixtureLoader } from '../src/seed/fixture-loader.service';
import { FixtureRegistry } from '../src/fixtures/fixture-registry';
import { freshDemo } from './support/fresh-demo';
import { createTestApp, type TestApp } from './support/test-app';
import { PROBE_PATHS } from '../src/health/health.controller';

/**
 * A module is registered in several places (its Nest module in the app, its
 * routes' scopes, its id prefix, its fixture section and demo rows, the
 * OpenAPI document). Forgetting one of them must fail here, not in a
 * newcomer's first request. docs/adding-a-module.md lists the places.
 */
const ROOT = resolve(__dirname, '..');

/** Sections with no routes of their own, and why. */
const SECTIONS_WITHOUT_ROUTES: Record<string, string> = {
  api_keys: 'keys are managed by the CLI and fixtures; the API never lists them',
};
/** The queries that together list every row of a section whose list hides some rows by default. */
const LIST_QUERIES_OF_SECTION: Record<string, Array<Record<string, string>>> = {
  conversations: [{}, { source: 'sub-agent' }], // sub-agent runs are listed only when asked for
};
/** Id kinds whose ids the API never shows or takes, and why. */
const IDS_NOT_IN_THE_API: Partial<Record<IdKind, string>> = {
  key: 'keys are never served',
  member: 'member ids are free-form strings (fixtures accept any), not prefixed ids',
  user: 'user ids are free-form strings, as for members',
};

let t: TestApp;
let document: { paths: Record<string, Record<string, Record<string, unknown>>> } & Record<string, unknown>;

beforeAll(async () => {
  t = await createTestApp();
  document = (await t.http.get('/api/v1/openapi.json')).body;
});
afterAll(() => t.close());

interface ServedRoute {
  module: string;
  controller: string;
  method: string;
  /** in OpenAPI form, relative to the API prefix: `/chatbots/{id}` */
  path: string;
  scope: string | undefined;
  isPublic: boolean;
}

/** Every route of every controller of every module the app holds, from Nest's own metadata (platform-independent). */
function routesOfTheApp(): ServedRoute[] {
  const routes: ServedRoute[] = [];
  for (const module of t.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Type;
      const bases = [Reflect.getMetadata(PATH_METADATA, controller) as string | string[]].flat();
      const prototype = controller.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler !== 'function' || Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number].toLowerCase();
        for (const base of bases) {
          for (const sub of [Reflect.getMetadata(PATH_METADATA, handler) as string | string[]].flat()) {
            const path = `/${[base, sub].filter((part) => part && part !== '/').join('/')}`.replace(/\/+/g, '/').replace(/:(\w+)/g, '{$1}');
            routes.push({
              module: module.metatype.name,
              controller: controller.name,
              method,
              path: path.length > 1 ? path.replace(/\/$/, '') : path,
              scope: (Reflect.getMetadata(REQUIRED_SCOPE, handler) ?? Reflect.getMetadata(REQUIRED_SCOPE, controller)) as string | undefined,
              isPublic: Boolean(Reflect.getMetadata(PUBLIC_ROUTE, handler) ?? Reflect.getMetadata(PUBLIC_ROUTE, controller)),
            });
          }
        }
      }
    }
  }
  return routes;
}

/**
 * A fixture section's list endpoint, read from the app: the GET route without a
 * path parameter of the module that provides the section (`/team` for
 * `members`), so no map of section names to paths is kept.
 */
function listPathOfSection(name: string): { path: string } | { problem: string } {
  const section = t.app.get(FixtureRegistry).ordered().find((candidate) => candidate.name === name);
  const module = [...t.app.get(ModulesContainer).values()].find((candidate) => [...candidate.providers.values()].some((wrapper) => wrapper.instance === section));
  if (!module) return { problem: `${name}: no module provides the section` };
  const lists = routesOfTheApp().filter((route) => route.module === module.metatype.name && route.method === 'get' && !route.path.includes('{'));
  const paths = [...new Set(lists.map((route) => route.path))];
  if (paths.length === 1) return { path: paths[0] };
  if (paths.includes(`/${name}`)) return { path: `/${name}` };
  return {
    problem:
      paths.length === 0
        ? `${name}: ${module.metatype.name}, which provides the section, serves no GET route without a path parameter to list its rows: add one, or add the section to SECTIONS_WITHOUT_ROUTES with the reason`
        : `${name}: ${module.metatype.name} serves several lists (${paths.join(', ')}) and none is /${name}: serve the section's rows at /${name}`,
  };
}

describe('every module is registered everywhere it must be', () => {
  test('every src/*/*.module.ts is part of the app (imported in app.module.ts)', async () => {
    const held = new Set([...t.app.get(ModulesContainer).values()].map((module) => module.metatype));
    const missing: string[] = [];
    for (const dir of readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((entry) => entry.isDirectory())) {
      for (const file of readdirSync(join(ROOT, 'src', dir.name)).filter((name) => name.endsWith('.module.ts'))) {
        const exported = (await import(join(ROOT, 'src', dir.name, file))) as Record<string, unknown>;
        for (const [name, value] of Object.entries(exported)) {
          if (typeof value === 'function' && name.endsWith('Module') && !held.has(value as Type)) missing.push(`${dir.name}/${file}: ${name}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  test("every route of every module is in the OpenAPI document, and the document has no route the app lacks", () => {
    // the orchestrator's probes are no part of the v1 API (docs/decisions.md; test/health.e2e-spec.ts
    // proves they are the only routes outside /api/v1 besides /docs)
    const routes = routesOfTheApp().filter((route) => !(PROBE_PATHS as readonly string[]).includes(route.path.slice(1)));
    expect(routes.length).toBeGreaterThan(10);
    const undocumented = routes.filter((route) => !document.paths[route.path]?.[route.method]).map((r) => `${r.controller}: ${r.method.toUpperCase()} ${r.path}`);
    expect(undocumented).toEqual([]);
    const served = new Set(routes.map((route) => `${route.method} ${route.path}`));
    const documentedOnly = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method) && !served.has(`${method} ${path}`))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documentedOnly).toEqual([]);
  });

  test('every route is public or requires one scope of the scope list, the same one the document names; every scope is used', () => {
    const problems: string[] = [];
    const used = new Set<string>();
    for (const route of routesOfTheApp()) {
      const where = `${route.controller}: ${route.method.toUpperCase()} ${route.path}`;
      const documented = document.paths[route.path]?.[route.method]?.['x-required-scope'];
      if (route.isPublic) {
        if (route.scope !== undefined) problems.push(`${where} is public and scoped`);
        continue;
      }
      if (route.scope === undefined) problems.push(`${where} has neither @RequireScope nor @Public`);
      else if (!(SCOPES as readonly string[]).includes(route.scope)) problems.push(`${where} requires ${route.scope}, not in src/auth/scopes.ts`);
      else if (documented !== route.scope) problems.push(`${where}: the document says ${String(documented)}`);
      if (route.scope) used.add(route.scope);
    }
    expect(problems).toEqual([]);
    expect(SCOPES.filter((scope) => !used.has(scope))).toEqual([]);
  });

  test('reads need a `:read` scope, creates and changes a `:write` scope, and a DELETE its own `:delete` scope', () => {
    const kind: Record<string, string> = { get: 'read', post: 'write', put: 'write', patch: 'write', delete: 'delete' };
    const wrong = routesOfTheApp()
      .filter((route) => !route.isPublic && route.scope !== undefined && !route.scope.endsWith(`:${kind[route.method]}`))
      .map((route) => `${route.controller}: ${route.method.toUpperCase()} ${route.path} requires ${route.scope}; it needs a \`<resource>:${kind[route.method]}\` scope`);
    expect(wrong).toEqual([]);
  });

  test('every id kind of libs/ids has its pattern in the served document, and every path id uses one', () => {
    const text = JSON.stringify(document);
    const patterns = (kind: IdKind) => [idPattern(kind), idPattern(kind, { allowBare: true })];
    // the app is loaded: the modules' own kinds (declareIdKind in their folders) are declared
    const kinds = [...idKinds().keys()];
    const unpatterned = kinds.filter(
      (kind) => !(kind in IDS_NOT_IN_THE_API) && !patterns(kind).some((pattern) => text.includes(JSON.stringify(pattern))),
    );
    expect(unpatterned).toEqual([]);
    const known = new Set(kinds.flatMap(patterns));
    const loose: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const parameter of (operation.parameters ?? []) as Array<{ in: string; name: string; schema?: { pattern?: string } }>) {
          if (parameter.in === 'path' && !known.has(parameter.schema?.pattern ?? '')) loose.push(`${method.toUpperCase()} ${path} {${parameter.name}}: ${parameter.schema?.pattern}`);
        }
      }
    }
    expect(loose).toEqual([]);
  });

  test('a fixture section of a module that takes a POST body names that request (agreesWith), so the agreement test covers it', () => {
    const unnamed: string[] = [];
    for (const section of t.app.get(FixtureRegistry).ordered()) {
      const module = [...t.app.get(ModulesContainer).values()].find((candidate) => [...candidate.providers.values()].some((wrapper) => wrapper.instance === section));
      const creates = routesOfTheApp().filter((route) => route.module === module?.metatype.name && route.method === 'post' && !route.path.includes('{'));
      const withBody = creates.filter((route) => document.paths[route.path]?.post?.requestBody !== undefined);
      if (withBody.length > 0 && !section.agreesWith) {
        unnamed.push(
          `${section.name}: ${module!.metatype.name} takes POST ${withBody[0].path} with a body, but the section does not say which request its items follow: derive the item class from the request DTO and pass agreesWith: { request, item, fixtureOnly } to super() (src/fixtures/fixture-registry.ts, FixtureAgreement)`,
        );
      }
    }
    expect(unnamed).toEqual([]);
  });

  test('every fixture section has demo rows, and its own list endpoint serves every one of them', async () => {
    const sections = t.app.get(FixtureRegistry).ordered();
    expect(sections.map((section) => section.name)).toEqual(expect.arrayContaining(['agents', 'chatbots']));
    const withoutDemo = sections
      .filter((section) => !(section.name in SECTIONS_WITHOUT_ROUTES))
      .filter((section) => {
        if (section.demoFile === null) return true;
        const rows = JSON.parse(readFileSync(join(ROOT, section.demoFile), 'utf8')) as unknown[];
        return !Array.isArray(rows) || rows.length === 0;
      })
      .map((section) => section.name);
    expect(withoutDemo).toEqual([]);

    // load the demo under fresh ids; every section's rows must show up in its OWN list endpoint
    const demo = freshDemo(t.app);
    const loaded = await t.app.get(FixtureLoader).load(demo.document);
    const auth = `Bearer ${loaded.generated_keys[0].token}`;
    const org = demo.document.orgs[0];
    const unserved: string[] = [];
    for (const name of sections.map((section) => section.name).filter((name) => !(name in SECTIONS_WITHOUT_ROUTES))) {
      const found = listPathOfSection(name);
      if ('problem' in found) {
        unserved.push(found.problem);
        continue;
      }
      const { path } = found;
      const listed = new Set<string>();
      for (const query of LIST_QUERIES_OF_SECTION[name] ?? [{}]) {
        let cursor: string | null = null;
        do {
          const res: { status: number; body: { data: Array<{ id: string }>; meta?: { next_cursor?: string | null } } } = await t.http
            .get(`/api/v1${path}`).query({ ...query, limit: 100, ...(cursor ? { cursor } : {}) }).set('Authorization', auth);
          expect({ path, query, status: res.status }).toEqual({ path, query, status: 200 });
          for (const row of res.body.data) listed.add(row.id);
          cursor = res.body.meta?.next_cursor ?? null;
        } while (cursor);
      }
      const ids = ((org[name] ?? []) as Array<{ id?: string }>).flatMap((row) => (row.id ? [row.id] : []));
      expect({ name, ids: ids.length > 0 }).toEqual({ name, ids: true });
      const missing = ids.filter((id) => !listed.has(id));
      if (missing.length > 0) unserved.push(`${name}: GET ${path} does not list ${missing.join(', ')}`);
    }
    expect(unserved).toEqual([]);
  });
});
