// The audit_log table (who changed what, per tenant); this module alone writes it.
import { AuditEntry } from '../../../db/entities/audit.js';
import type { EntityManager } from '../../../db/orm.js';

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

/** A page of the tenant's entries, newest first, with the number of all that match. */
export async function findAuditEntries(em: EntityManager, tenantId: string, page: { limit: number; offset: number }, action?: string) {
  const where = { tenant: tenantId, ...(action ? { action } : {}) };
  const [entries, total] = await em.findAndCount(AuditEntry, where, {
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit: page.limit,
    offset: page.offset,
  });
  return { entries, total };
}

/** Writes the entries added to the unit of work (with whatever else it holds: the change they record). */
export async function flushAuditEntries(em: EntityManager): Promise<void> {
  await em.flush();
}
