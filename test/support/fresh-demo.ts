import type { INestApplication } from '@nestjs/common';
import { newObjectIdHex } from '../../libs/ids/ids';
import { buildDemoFixture } from '../../src/seed/demo-fixture';
import { FixtureRegistry } from '../../src/fixtures/fixture-registry';

/**
 * The bundled demo organization with every id (and the globally unique slug
 * and chatbot public ids) made fresh, so test files sharing one PostgreSQL
 * database never collide. `ids` maps each demo id to its fresh one.
 */
export function freshDemo(app: INestApplication): { document: { orgs: Array<Record<string, unknown>> }; ids: Map<string, string> } {
  const ids = new Map<string, string>();
  const text = JSON.stringify(buildDemoFixture(app.get(FixtureRegistry)))
    .replace(/"([a-z]+)_([a-f0-9]{24})"/g, (whole, prefix: string) => {
      if (!ids.has(whole)) ids.set(whole, `"${prefix}_${newObjectIdHex()}"`);
      return ids.get(whole)!;
    })
    .replace(/"public_id":"([^"]+)"/g, (_whole, value: string) => `"public_id":"${value}_${newObjectIdHex().slice(-8)}"`);
  const document = JSON.parse(text) as { orgs: Array<Record<string, unknown>> };
  document.orgs[0].slug = `demo-${newObjectIdHex()}`;
  const unquoted = new Map([...ids].map(([from, to]) => [from.slice(1, -1), to.slice(1, -1)]));
  return { document, ids: unquoted };
}
