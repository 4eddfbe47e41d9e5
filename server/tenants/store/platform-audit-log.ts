// The platform_audit_log table (what was done to tenants as a whole); this module alone writes it.
import { sql } from 'kysely';
import { countCapped, newestFirstPage } from '../../../db/keyset.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt } from '../../../db/statements.js';
import type { PageRequest } from '../../common/pagination.js';

export interface NewPlatformAuditEntry {
  actorType: string;
  actorName: string;
  action: string;
  targetType: string;
  targetId: string | null;
  details: Record<string, unknown>;
}

/**
 * Writes an entry at once, on its own (a deletion's entries must stay whatever happens to the work
 * they record): one insert on the pool, outside any unit of work.
 */
export async function insertPlatformAuditEntry(query: SqlPool['query'], entry: NewPlatformAuditEntry): Promise<string> {
  const [row] = await runBuilt(
    query,
    build
      .insertInto('platform_audit_log')
      .values({
        actor_type: entry.actorType,
        actor_name: entry.actorName,
        action: entry.action,
        target_type: entry.targetType,
        target_id: entry.targetId,
        details: sql`${JSON.stringify(entry.details)}::jsonb`,
      })
      .returning('id'),
  );
  return row.id;
}

export interface PlatformAuditRow {
  id: string;
  actor_type: string;
  actor_name: string;
  action: string;
  target_type: string;
  target_id: string | null;
  details: Record<string, unknown>;
  created_at: Date;
  cursor_key: string;
}

function entries(em: EntityManager, filter: { action?: string; targetId?: string }) {
  return kyselyOf(em)
    .selectFrom('platform_audit_log')
    .$if(filter.action !== undefined, (qb) => qb.where('action', '=', filter.action!))
    .$if(filter.targetId !== undefined, (qb) => qb.where('target_id', '=', filter.targetId!));
}

/** A page of entries, newest first (ties by id), and one more when there is a next page. */
export async function findPlatformAuditEntries(em: EntityManager, page: PageRequest, filter: { action?: string; targetId?: string }): Promise<PlatformAuditRow[]> {
  const rows = await newestFirstPage(entries(em, filter).select(['id', 'actor_type', 'actor_name', 'action', 'target_type', 'target_id', 'details', 'created_at']), 'created_at', page).execute();
  return rows as unknown as PlatformAuditRow[];
}

/** How many entries match, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countPlatformAuditEntries(em: EntityManager, filter: { action?: string; targetId?: string }, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), entries(em, filter).select(sql.lit(1).as('one')), cap);
}
