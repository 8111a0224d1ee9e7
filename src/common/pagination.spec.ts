import type { AppConfig } from '../config/config';
import { CursorCodec } from '../../libs/cursor/cursor';
import { newId } from '../../libs/ids/ids';
import { ApiError } from './api-error';
import { Page } from './envelope';
import { DEFAULT_PAGE_SIZE, PaginationQuery, Paginator } from './pagination';
import { ApiValidationPipe } from './validation';

const SECRET = 'unit-test-cursor-secret-0123456789';
const paginator = new Paginator({ cursorSecret: SECRET } as AppConfig);
const pipe = new ApiValidationPipe();

function rows(count: number): Array<{ id: string }> {
  // newest first, as a repository returns them
  return Array.from({ length: count }, (_, i) => ({ id: newId('agent', new Date(Date.UTC(2025, 0, 1) + (count - i) * 1000)) }));
}

/** What the global pipe makes of a query string's values. */
function parseQuery(query: Record<string, unknown>): Promise<PaginationQuery> {
  return pipe.transform(query, { type: 'query', metatype: PaginationQuery }) as Promise<PaginationQuery>;
}

async function expect422(promise: Promise<unknown> | (() => unknown), field: string): Promise<void> {
  let error: unknown;
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).status).toBe(422);
  expect((error as ApiError).code).toBe('validation_failed');
  expect(Object.keys((error as ApiError).details?.fields ?? {})).toEqual([field]);
}

describe('limit: default 25, 1 to 100, anything else → 422 validation_failed', () => {
  test.each([['0'], ['-1'], ['101'], ['abc'], ['1.5'], [''], ['1e2'], [' 5'], ['0x10'], ['99999999999999999999']])('limit=%j → 422', (limit) =>
    expect422(parseQuery({ limit }), 'limit'),
  );

  test('a repeated limit (an array) → 422', () => expect422(parseQuery({ limit: ['1', '2'] }), 'limit'));

  test.each([
    ['1', 1],
    ['25', 25],
    ['100', 100],
  ])('limit=%s is accepted', async (limit, expected) => {
    const query = await parseQuery({ limit });
    expect(query.limit).toBe(expected);
    expect(paginator.pageRequest(query, { cursorNamespace: 'agents' }).limit).toBe(expected);
  });

  test('no limit → 25, fetching one more to detect the end', async () => {
    const request = paginator.pageRequest(await parseQuery({}), { cursorNamespace: 'agents' });
    expect(request).toMatchObject({ limit: DEFAULT_PAGE_SIZE, fetch: DEFAULT_PAGE_SIZE + 1, afterId: null });
  });

  // docs/decisions.md "Unknown query parameters": ignored (stripped) on every endpoint
  test('unknown query parameters are ignored', async () => expect(await parseQuery({ limit: '5', page: '2' })).toEqual({ limit: 5 }));
});

describe('meta.next_cursor is null whenever no further item exists', () => {
  test('fewer rows than the limit: null', () => {
    const request = paginator.pageRequest({ limit: 5 }, { cursorNamespace: 'agents' });
    const page = paginator.page(rows(3), request);
    expect(page.items).toHaveLength(3);
    expect(page.nextCursor).toBeNull();
  });

  test('the last page exactly full (limit rows, no extra row): null', () => {
    const request = paginator.pageRequest({ limit: 5 }, { cursorNamespace: 'agents' });
    const page = paginator.page(rows(5), request);
    expect(page.items).toHaveLength(5);
    expect(page.nextCursor).toBeNull();
  });

  test('an extra row: a cursor that continues after the last item shown, and the extra row is not shown', () => {
    const request = paginator.pageRequest({ limit: 5 }, { cursorNamespace: 'agents' });
    const fetched = rows(6);
    const page = paginator.page(fetched, request);
    expect(page).toBeInstanceOf(Page);
    expect(page.items).toEqual(fetched.slice(0, 5));
    expect(page.nextCursor).toEqual(expect.any(String));
    expect(page.nextCursor).toMatch(/^[A-Za-z0-9_.-]+$/); // URL-safe
    const next = paginator.pageRequest({ limit: 5, cursor: page.nextCursor! }, { cursorNamespace: 'agents' });
    expect(next.afterId).toBe(fetched[4].id);
  });

  test('empty list: null', () => {
    expect(paginator.page([], paginator.pageRequest({}, { cursorNamespace: 'agents' })).nextCursor).toBeNull();
  });
});

describe('invalid, tampered or filter-mismatched cursor → 422 validation_failed', () => {
  const issue = (cursorNamespace = 'agents', filters: Record<string, unknown> = {}) =>
    paginator.page(rows(3), paginator.pageRequest({ limit: 2 }, { cursorNamespace, filters })).nextCursor!;

  test.each([['garbage'], ['a.b'], ['...'], ['x'.repeat(600)], ['eyJpIjoiYWdlbnRfMSIsImYiOiJ4In0']])('not a cursor: %s', (cursor) =>
    expect422(() => paginator.pageRequest({ cursor }, { cursorNamespace: 'agents' }), 'cursor'),
  );

  test('tampered payload (same MAC)', () => {
    const cursor = issue();
    const [body, mac] = cursor.split('.');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString()) as { i: string; f: string };
    const forged = Buffer.from(JSON.stringify({ ...payload, i: 'agent_ffffffffffffffffffffffff' })).toString('base64url');
    return expect422(() => paginator.pageRequest({ cursor: `${forged}.${mac}` }, { cursorNamespace: 'agents' }), 'cursor');
  });

  test('tampered MAC', () => {
    const cursor = issue();
    const flipped = cursor.slice(0, -1) + (cursor.endsWith('A') ? 'B' : 'A');
    return expect422(() => paginator.pageRequest({ cursor: flipped }, { cursorNamespace: 'agents' }), 'cursor');
  });

  test('signed with another secret', () => {
    const foreign = new CursorCodec('another-secret-entirely-0123456789').encode({ lastId: 'agent_1', filterHash: 'x' });
    return expect422(() => paginator.pageRequest({ cursor: foreign }, { cursorNamespace: 'agents' }), 'cursor');
  });

  test('issued for other filters', () => {
    const cursor = issue('conversations', { source: 'embed' });
    expect(() => paginator.pageRequest({ cursor }, { cursorNamespace: 'conversations', filters: { source: 'embed' } })).not.toThrow();
    return expect422(() => paginator.pageRequest({ cursor }, { cursorNamespace: 'conversations', filters: { source: 'dashboard' } }), 'cursor');
  });

  test('issued under another cursor namespace', () =>
    expect422(() => paginator.pageRequest({ cursor: issue('agents') }, { cursorNamespace: 'sources' }), 'cursor'));

  test('filter order and undefined filters do not matter', () => {
    const cursor = issue('conversations', { a: 1, b: 'x', c: undefined });
    expect(paginator.pageRequest({ cursor }, { cursorNamespace: 'conversations', filters: { b: 'x', a: 1 } }).afterId).toEqual(expect.any(String));
  });
});
