// The operator's audit log: deletions (with their receipts), exports and imports of whole tenants.
import type { EntityManager } from '../../db/orm.js';
import type { SqlPool } from '../../db/sql-pool.js';
import type { Actor } from '../actor.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery } from '../common/pagination.js';
import { countPlatformAuditEntries, findPlatformAuditEntries, insertPlatformAuditEntry } from './store/platform-audit-log.js';
import type { PlatformAuditEntryDto } from './tenant-data.schemas.js';

const LIST: HistoryList = { name: 'platform-audit', key: 'time' };

/** Records what was done to a tenant as a whole, at once and outside any transaction of the work. */
export async function recordTenantAction(sql: Pick<SqlPool, 'query'>, actor: Actor, action: string, tenantId: string, details: Record<string, unknown>): Promise<void> {
  await insertPlatformAuditEntry(sql.query, { actorType: actor.type, actorName: actor.name, action, targetType: 'tenant', targetId: tenantId, details });
}

export async function listPlatformAudit(em: EntityManager, query: HistoryPageQuery & { action?: string; target_id?: string }) {
  const filter = { action: query.action, targetId: query.target_id };
  const request = pageRequestOf(LIST, query);
  const rows = await findPlatformAuditEntries(em, request, filter);
  const page = await pageOfRows(LIST, request, rows, (r) => ({ key: r.cursor_key, id: r.id }), (cap) => countPlatformAuditEntries(em, filter, cap));
  const entries: PlatformAuditEntryDto[] = page.items.map((r) => ({
    id: r.id,
    actor: r.actor_name,
    actor_type: r.actor_type,
    action: r.action,
    target_type: r.target_type,
    target_id: r.target_id,
    details: r.details,
    created_at: new Date(r.created_at).toISOString(),
  }));
  return { entries, pagination: page.pagination };
}
