import type { EntityManager } from '../../db/orm.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery } from '../common/pagination.js';
import { isoRequired } from '../common/schemas.js';
import type { Actor } from '../actor.js';
import { addAuditEntry, countAuditEntries, findAuditEntries, flushAuditEntries } from './store/audit-log.js';

export interface AuditInput {
  action: string;
  targetType: string;
  targetId?: string | null;
  details?: Record<string, unknown>;
}

/** Adds an audit entry to the unit of work (flushed with the change it records). */
export function recordAudit(em: EntityManager, tenantId: string, actor: Actor, input: AuditInput): void {
  addAuditEntry(em, {
    tenantId,
    actorType: actor.type,
    actorId: actor.id,
    actorName: actor.name,
    action: input.action,
    targetType: input.targetType,
    targetId: input.targetId ?? null,
    details: input.details ?? null,
  });
}

/** Records an audit entry and flushes the unit of work now (for changes written without the ORM). */
export async function recordAuditNow(em: EntityManager, tenantId: string, actor: Actor, input: AuditInput): Promise<void> {
  recordAudit(em, tenantId, actor, input);
  await flushAuditEntries(em);
}

const AUDIT_LIST: HistoryList = { name: 'audit_log', key: 'time' };

export async function listAuditLog(em: EntityManager, tenantId: string, query: HistoryPageQuery, filter: { action?: string } = {}) {
  const request = pageRequestOf(AUDIT_LIST, query);
  const rows = await findAuditEntries(em, tenantId, request, filter.action);
  const page = await pageOfRows(AUDIT_LIST, request, rows, (r) => ({ key: r.cursorKey, id: r.entry.id }), (cap) => countAuditEntries(em, tenantId, filter.action, cap));
  return {
    entries: page.items.map(({ entry: e }) => ({
      id: e.id,
      actor: e.actorName,
      actor_type: e.actorType,
      actor_id: e.actorId ?? null,
      action: e.action,
      target_type: e.targetType,
      target_id: e.targetId ?? null,
      details: e.details ?? {},
      created_at: isoRequired(e.createdAt),
    })),
    pagination: page.pagination,
  };
}
