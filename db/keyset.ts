// SQL pieces every history list shares (server/common/pagination.ts is their wire side): the exact
// sort key a cursor carries, the keyset condition, and a count that stops early. The stores compose
// them into their own statements; each list's filters and order stay written out where its index is
// chosen.
import { sql, type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';

/**
 * A list's total is counted this many rows past the end of the page asked for, and no further (one
 * row more says "more than this"). Counting further would make a first page cost more the more
 * history a tenant has: 10,001 index entries take about 4 ms on PostgreSQL 15, 121 about 0.15 ms.
 */
export const TOTAL_LOOKAHEAD = 100;

/**
 * A timestamptz column as ISO 8601 text in UTC to the microsecond. A cursor must carry the sort key
 * exactly: a JavaScript Date keeps milliseconds, and rows written with now() in the same millisecond
 * would be skipped or repeated at a page boundary. `$n::timestamptz` reads this text back exactly.
 */
export const cursorTimeSql = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** cursorTimeSql for Kysely (`column` is a fixed name, never request data). */
const cursorTime = (column: string): RawBuilder<string> => sql<string>`${sql.raw(cursorTimeSql(column))}`;

/**
 * Rows strictly after (`time`, `id`) in the order `time desc, id desc`. As one row comparison it is a
 * single range on an index ending in (time, id): the scan starts at the cursor and reads no row twice.
 */
const olderThan = (timeColumn: string, after: { key: string; id: string }): Expression<SqlBool> =>
  sql<SqlBool>`(${sql.ref(timeColumn)}, ${sql.ref('id')}) < (${after.key}::timestamptz, ${after.id}::uuid)`;

/**
 * `select count(*) as n` over the rows `matching` selects (a select without order or limit; its
 * selection is not read: select a literal), reading at most `cap` + 1 of them: on the list's index
 * that is an index-only scan that stops early, so a count costs the same at ten million rows as at a
 * hundred. `cap` is an integer the caller computed (pageOfRows), never request text.
 */
export async function countCapped<DB, TB extends keyof DB, O>(db: Kysely<DB>, matching: SelectQueryBuilder<DB, TB, O>, cap: number): Promise<number> {
  const { n } = await (db as unknown as Kysely<Record<string, never>>)
    .selectFrom(matching.limit(Math.trunc(cap) + 1).as('capped'))
    .select(sql<number>`count(*)::int`.as('n'))
    .executeTakeFirstOrThrow();
  return n;
}

/** The page a history list asks for (server/common/pagination.ts builds it). */
export interface KeysetPage {
  limit: number;
  offset: number;
  after: { key: string; id: string } | null;
}

/**
 * The page of a select, newest first by `timeColumn` and then id: the exact sort key selected as
 * `cursor_key`, the rows after the cursor, and limit + 1 rows (the extra one says a next page
 * exists) from the offset. The select's filters must match an index ending in (timeColumn, id).
 */
export function newestFirstPage<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>, timeColumn: string, page: KeysetPage) {
  return qb
    .select(cursorTime(timeColumn).as('cursor_key'))
    .$if(page.after !== null, (q) => q.where(olderThan(timeColumn, page.after!)))
    .orderBy(sql.ref(timeColumn), 'desc')
    .orderBy(sql.ref('id'), 'desc')
    .limit(page.limit + 1)
    .offset(page.offset);
}
