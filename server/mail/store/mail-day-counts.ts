// The daily mail counter of each tenant (mail_day_counts); this module alone writes it.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

// One statement checks and raises the count: the first mail of a day inserts the row (when it fits
// at all), later ones raise it only while it stays within the limit. Concurrent callers queue on
// the row's lock, so the quota is exact however many runs send at once.
// Raw(other): an insert … select guarded by a where without a from, and an on-conflict update with its own where.
const RESERVE_SQL = `insert into mail_day_counts as c (tenant_id, day, mails) select ?, ?::date, ? where ? <= ?
  on conflict (tenant_id, day) do update set mails = c.mails + excluded.mails where c.mails + excluded.mails <= ?
  returning c.mails`;

/**
 * Adds `mails` to the tenant's count for `day` (YYYY-MM-DD, UTC) when the sum stays within
 * `limit`; answers false, changing nothing, when it would not. Call it in the transaction that
 * queues the mail: a rollback gives the mails back, and the row stays locked until the end.
 */
export async function reserveDayMails(em: EntityManager, tenantId: string, day: string, mails: number, limit: number): Promise<boolean> {
  const rows = await em.execute<{ mails: number }[]>(RESERVE_SQL, [tenantId, day, mails, mails, limit, limit]);
  return rows.length > 0;
}

/** Deletes the counts of days before `day` (YYYY-MM-DD); returns how many. */
export async function deleteDayCountsBefore(em: EntityManager, day: string): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('mail_day_counts').where('day', '<', sql<string>`${day}::date`).executeTakeFirst();
  return Number(result.numDeletedRows);
}
