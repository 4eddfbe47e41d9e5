import type { EntityManager } from '../../db/orm.js';
import { isoRequired } from '../common/schemas.js';
import type { Actor } from '../actor.js';
import { addAuditEntry, findAuditEntries, flushAuditEntries } from './store/audit-log.js';

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

export async function listAuditLog(em: EntityManager, tenantId: string, page: { limit: number; offset: number }, filter: { action?: string } = {}) {
  const { entries, total } = await findAuditEntries(em, tenantId, page, filter.action);
  return {
    entries: entries.map((e) => ({
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
    pagination: { total, limit: page.limit, offset: page.offset },
  };
}
