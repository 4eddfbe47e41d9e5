// The audit_log table (who changed what, per tenant); this module alone writes it.
import { type InferEntity } from '@mikro-orm/core';
import { sql } from 'kysely';
import { AuditEntry } from '../../../db/entities/audit.js';
import { countCapped, newestFirstPage } from '../../../db/keyset.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { PageRequest } from '../../common/pagination.js';

type IAuditEntry = InferEntity<typeof AuditEntry>;

export interface NewAuditEntry {
  tenantId: string;
  actorType: string;
  actorId: string | null;
  actorName: string;
  action: string;
  targetType: string;
  targetId: string | null;
  details: Record<string, unknown> | null;
}

/** Adds an audit entry to the unit of work; it is written by the caller's next flush. */
export function addAuditEntry(em: EntityManager, entry: NewAuditEntry): void {
  em.create(AuditEntry, {
    tenant: entry.tenantId,
    actorType: entry.actorType,
    actorId: entry.actorId,
    actorName: entry.actorName,
    action: entry.action,
    targetType: entry.targetType,
    targetId: entry.targetId,
    details: entry.details,
  });
}

/** The tenant's entries, of one action when given (an equality its index begins with). */
function tenantEntries(em: EntityManager, tenantId: string, action: string | undefined) {
  return kyselyOf(em)
    .selectFrom('audit_log')
    .where('tenant_id', '=', tenantId)
    .$if(action !== undefined, (qb) => qb.where('action', '=', action!));
}

/**
 * A page of the tenant's entries, newest first (ties by id), and one more when there is a next page;
 * on (tenant_id[, action], created_at desc, id desc), from the offset or the cursor. Each entry comes
 * with its exact sort key (`cursorKey`).
 */
export async function findAuditEntries(em: EntityManager, tenantId: string, page: PageRequest, action?: string): Promise<{ entry: IAuditEntry; cursorKey: string }[]> {
  const rows = await newestFirstPage(tenantEntries(em, tenantId, action).selectAll(), 'created_at', page).execute();
  return rows.map(({ cursor_key, ...columns }) => ({ entry: em.map(AuditEntry, columns), cursorKey: cursor_key }));
}

/** How many of the tenant's entries match, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countAuditEntries(em: EntityManager, tenantId: string, action: string | undefined, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), tenantEntries(em, tenantId, action).select(sql.lit(1).as('one')), cap);
}

/** Writes the entries added to the unit of work (with whatever else it holds: the change they record). */
export async function flushAuditEntries(em: EntityManager): Promise<void> {
  await em.flush();
}

/** The tenant's entries whose target or details name the end user (`patterns`: common/mentions.ts). */
export async function findEntriesMentioning(
  em: EntityManager,
  tenantId: string,
  patterns: { json: string; text: string },
): Promise<{ id: string; target_id: string | null; details: Record<string, unknown> | null }[]> {
  return kyselyOf(em)
    .selectFrom('audit_log')
    .select(['id', 'target_id', 'details'])
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([eb('target_id', 'like', patterns.text), eb(sql<string>`details::text`, 'like', patterns.json)]))
    .execute();
}

/** Rewrites one entry's target and details (an erasure anonymising it). */
export async function rewriteEntry(em: EntityManager, tenantId: string, id: string, values: { targetId: string | null; details: Record<string, unknown> | null }): Promise<void> {
  await kyselyOf(em)
    .updateTable('audit_log')
    .set({ target_id: values.targetId, details: values.details === null ? null : sql`${JSON.stringify(values.details)}::jsonb` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute();
}
