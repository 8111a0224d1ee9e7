import { Inject, Injectable } from '@nestjs/common';
import { CursorCodec, filterHash } from '../../libs/cursor/cursor';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { ApiError } from './api-error';
import { Page } from './envelope';
import { QueryIntParam, QueryTextParam } from './field';

export const DEFAULT_PAGE_SIZE = 25;
const MAX_PAGE_SIZE = 100;

/** `cursor` and `limit`, shared by every paginated endpoint (extend it for filters). */
export class PaginationQuery {
  @QueryTextParam({ maxLength: 512, description: 'Opaque cursor from `meta.next_cursor` of the previous page.' })
  cursor?: string;

  @QueryIntParam({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })
  limit?: number;
}

/** What a repository needs to fetch one page: keyset on id, one extra row to detect the end. */
export interface PageRequest {
  /** continue after this id (exclusive); null on the first page */
  afterId: string | null;
  limit: number;
  /** rows to fetch: limit + 1 */
  fetch: number;
  readonly filterHash: string;
}

/**
 * Which list a cursor belongs to, and the filters it was issued with. A
 * cursor issued under one namespace is refused under any other, so each list
 * has a namespace of its own: the resource's plural (`agents`), or with the
 * parent's id for a list inside one resource (`messages:<conversation id>`).
 */
interface CursorScope {
  cursorNamespace: string;
  /** every filter of the list: a cursor is valid only with the filters it was issued for */
  filters?: Record<string, unknown>;
}

/**
 * The one pagination helper every list endpoint uses. Cursors are bound to
 * the list they came from and to its filters, so changing either restarts the
 * traversal (a cursor is valid only with the filters it was issued for).
 */
@Injectable()
export class Paginator {
  private readonly codec: CursorCodec;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.codec = new CursorCodec(config.cursorSecret);
  }

  /** The page a query asks for, its cursor checked against `scope` (422 on `cursor` when it does not belong there). */
  pageRequest(query: PaginationQuery, { cursorNamespace, filters = {} }: CursorScope): PageRequest {
    // hashed under `list`, as before the name said what it is: cursors already handed out stay valid
    const hash = filterHash({ list: cursorNamespace, filters });
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    let afterId: string | null = null;
    if (query.cursor !== undefined) {
      const decoded = this.codec.decode(query.cursor);
      if (!decoded) throw ApiError.field('cursor', 'is not a valid cursor');
      if (decoded.filterHash !== hash) {
        throw ApiError.field('cursor', 'was issued for other filters; restart the traversal without a cursor');
      }
      afterId = decoded.lastId;
    }
    return { afterId, limit, fetch: limit + 1, filterHash: hash };
  }

  /** Turns `limit + 1` fetched rows into a page; `next_cursor` is null when nothing follows. */
  page<T extends { id: string }>(rows: T[], request: PageRequest): Page<T> {
    if (rows.length <= request.limit) return new Page(rows, null);
    const items = rows.slice(0, request.limit);
    const last = items[items.length - 1];
    return new Page(items, this.codec.encode({ lastId: last.id, filterHash: request.filterHash }));
  }
}
