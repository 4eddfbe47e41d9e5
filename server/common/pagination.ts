// Paging through history (runs, sessions, the audit log, deployments...): lists that grow with
// traffic without bound. The specification's page/pageSize and {total, limit, offset} stay, but an
// offset makes the database read and skip every earlier row, and an exact total counts every
// matching row, so both cost more the more history there is. Here:
// - a cursor continues after the last row of a page (keyset): the query starts at that row on an
//   index in the list's order, so page 5,000 costs what page 1 does;
// - offset paging stays, to a bounded depth (MAX_OFFSET_DEPTH rows);
// - `total` is counted TOTAL_LOOKAHEAD rows past the end of the page and no further, and says
//   whether it is exact (a count of every row would cost a first page more the more history there is).
// The SQL side (the cursor's exact key, the keyset condition, the capped count) is db/keyset.ts.
import { z } from 'zod';
import { TOTAL_LOOKAHEAD } from '../../db/keyset.js';
import { invalidInput } from '../errors.js';
import { isUuid, pageQuery, paginationSchema } from './schemas.js';

/** Offset paging reaches at most this many rows deep (offset + limit); deeper is walked by cursor. */
const MAX_OFFSET_DEPTH = 10_000;

const CURSOR_MAX_CHARS = 400;

/** The query of a history list: the specification's `page`/`pageSize`, and `cursor`. */
export const historyPageQuery = {
  ...pageQuery,
  cursor: z
    .string()
    .max(CURSOR_MAX_CHARS)
    .optional()
    .describe(
      'Continue after the last row of a previous page: pass that page\'s `pagination.next_cursor` (with the same filters). ' +
        'With a cursor `page` is ignored and `offset` answers 0; each page costs the same however deep. A cursor that is malformed ' +
        'or was issued by another list is 400 INVALID_INPUT. An empty value is no cursor.',
    ),
};

export const historyPaginationSchema = paginationSchema
  .extend({
    total: z
      .number()
      .int()
      .describe(
        `Rows matching the filters (all of them, not only those after a cursor), counted up to ${TOTAL_LOOKAHEAD} rows past the end of this page ` +
          `(offset + limit + ${TOTAL_LOOKAHEAD}): when there are more, total is that number plus one and total_is_exact is false (read it as "at least"; ` +
          'next_cursor walks them all). A count of every row would make each page cost more the more history there is.',
      ),
    offset: z.number().int().describe('Rows skipped before this page (0 when the page was asked for by cursor).'),
    total_is_exact: z.boolean().describe(`false when more than offset + limit + ${TOTAL_LOOKAHEAD} rows match: total is then a lower bound.`),
    next_cursor: z
      .string()
      .nullable()
      .describe('Pass as `cursor` to get the rows after this page, in the same order; null when this page is the last.'),
  })
  .meta({ id: 'HistoryPagination' });
export type HistoryPagination = z.infer<typeof historyPaginationSchema>;

/** What a history list's router hands its service (the parsed query). */
export interface HistoryPageQuery {
  page: number;
  pageSize: number;
  cursor?: string;
}

/**
 * A list a cursor belongs to: its name (a cursor of another list is refused) and the kind of its sort
 * key: a timestamp (ISO text to the microsecond, newest first) or a position (an integer, ascending).
 */
export interface HistoryList {
  name: string;
  key: 'time' | 'position';
}

/** Where a keyset page starts: strictly after the row with this sort key and id. */
interface Cursor {
  /** ISO 8601 UTC to the microsecond (a `time` list) or a decimal integer (a `position` list). */
  key: string;
  id: string;
}

/** A page as the store reads it: `limit` rows (the store reads one more), after `offset` rows or after `after`. */
export interface PageRequest {
  limit: number;
  offset: number;
  after: Cursor | null;
}

const TIME_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const POSITION_KEY = /^(0|[1-9]\d{0,9})$/;
const INT4_MAX = 2_147_483_647;

/**
 * A key PostgreSQL reads without an error: a real calendar instant (JavaScript would read 30
 * February as 2 March; PostgreSQL refuses it) after 1970, or a position within its integer column.
 */
function keyIsValid(kind: HistoryList['key'], key: string): boolean {
  if (kind === 'position') return POSITION_KEY.test(key) && Number(key) <= INT4_MAX;
  if (!TIME_KEY.test(key)) return false;
  const ms = Date.parse(key);
  return ms >= 0 && new Date(ms).toISOString().slice(0, 19) === key.slice(0, 19);
}
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function encodeCursor(list: HistoryList, cursor: Cursor): string {
  return Buffer.from(JSON.stringify([list.name, cursor.key, cursor.id])).toString('base64url');
}

const badCursor = (message: string) => invalidInput(message, [{ path: 'cursor', message, code: 'invalid_cursor' }]);

/** The cursor's row, or a 400 when it was not issued by this list (any tampering lands here). */
function decodeCursor(list: HistoryList, text: string): Cursor {
  let parsed: unknown;
  try {
    parsed = BASE64URL.test(text) ? JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || !parsed.every((part) => typeof part === 'string')) {
    throw badCursor('cursor is not a cursor this API issued: pass pagination.next_cursor as it was answered');
  }
  const [name, key, id] = parsed as [string, string, string];
  if (name !== list.name) throw badCursor('cursor belongs to another list: pass the next_cursor of this list');
  if (!keyIsValid(list.key, key) || !isUuid(id)) throw badCursor('cursor is not a cursor this API issued: pass pagination.next_cursor as it was answered');
  return { key, id };
}

/**
 * The page a history list's query asks for. 400 INVALID_INPUT for a cursor this list did not issue,
 * and for an offset page reaching deeper than MAX_OFFSET_DEPTH rows (walk those by cursor).
 */
export function pageRequestOf(list: HistoryList, query: HistoryPageQuery): PageRequest {
  if (query.cursor) return { limit: query.pageSize, offset: 0, after: decodeCursor(list, query.cursor) };
  const offset = (query.page - 1) * query.pageSize;
  if (offset + query.pageSize > MAX_OFFSET_DEPTH) {
    const message =
      `page ${query.page} of pageSize ${query.pageSize} reaches past row ${MAX_OFFSET_DEPTH.toLocaleString('en')}, the deepest an offset page goes: ` +
      'walk further with cursor (pass each page\'s pagination.next_cursor)';
    throw invalidInput(message, [{ path: 'page', message, code: 'too_deep' }]);
  }
  return { limit: query.pageSize, offset, after: null };
}

/**
 * The page out of the rows a store read for `request` (up to limit + 1: the extra row only says
 * there is a next page), with its pagination. `countMatching` (a capped count, db/keyset.ts) runs
 * only when the rows cannot tell the total: a full page, a page by cursor, or an offset past the end.
 */
export async function pageOfRows<T>(
  list: HistoryList,
  request: PageRequest,
  rows: T[],
  cursorOf: (row: T) => Cursor,
  countMatching: (cap: number) => Promise<number>,
): Promise<{ items: T[]; pagination: HistoryPagination }> {
  const items = rows.slice(0, request.limit);
  const more = rows.length > request.limit;
  const knownFromRows = request.after === null && !more && (items.length > 0 || request.offset === 0);
  const cap = request.offset + request.limit + TOTAL_LOOKAHEAD;
  const total = knownFromRows ? request.offset + items.length : await countMatching(cap);
  return {
    items,
    pagination: {
      total: Math.min(total, cap + 1),
      limit: request.limit,
      offset: request.offset,
      total_is_exact: total <= cap,
      next_cursor: more ? encodeCursor(list, cursorOf(items[items.length - 1])) : null,
    },
  };
}

/** The paging rules of every history list, for its route's description. */
export const HISTORY_LIST_NOTE =
  `History list: \`page\`/\`pageSize\` reach at most ${MAX_OFFSET_DEPTH.toLocaleString('en')} rows deep (deeper is 400 INVALID_INPUT); ` +
  'any depth is walked with `cursor`, the previous page\'s `pagination.next_cursor` (null on the last page), at the same cost per page. ' +
  `\`total\` is counted up to ${TOTAL_LOOKAHEAD} rows past the page's end (\`pagination.total_is_exact\`), so a page costs the same however much history there is. Ties in the order are broken by id.`;
