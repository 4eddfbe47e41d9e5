// The sessions and session_messages tables (end users' conversations with the intents): their reads
// and their expiry. A run's turn is written in the intent run's one statement (intents/store/run-record.ts).
import { Session, SessionMessage, type ISession, type ISessionMessage } from '../../../db/entities/session.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

export type { ISession as SessionRow, ISessionMessage as SessionMessageRow } from '../../../db/entities/session.js';

export async function findTenantSession(em: EntityManager, tenantId: string, sessionId: string): Promise<ISession | null> {
  return em.findOne(Session, { id: sessionId, tenant: tenantId });
}

/** The session's last `limit` messages, newest first. */
export async function listLatestSessionMessages(em: EntityManager, sessionId: string, limit: number): Promise<ISessionMessage[]> {
  return em.find(SessionMessage, { session: sessionId }, { orderBy: { createdAt: 'desc', role: 'desc' }, limit });
}

/** The session's messages, oldest first. */
export async function listSessionMessages(em: EntityManager, session: ISession): Promise<ISessionMessage[]> {
  return em.find(SessionMessage, { session }, { orderBy: { createdAt: 'asc', role: 'desc' } });
}

/** One page of the tenant's sessions, most recently active first, and how many match in all. */
export async function listTenantSessions(
  em: EntityManager,
  tenantId: string,
  filter: { status?: ISession['status']; domain?: string },
  page: { limit: number; offset: number },
): Promise<[ISession[], number]> {
  const where = { tenant: tenantId, ...(filter.status ? { status: filter.status } : {}), ...(filter.domain ? { domain: filter.domain } : {}) };
  return em.findAndCount(Session, where, { orderBy: { lastActivityAt: 'desc', id: 'asc' }, limit: page.limit, offset: page.offset });
}

/** Active sessions idle since before `idleBefore` become expired; answers how many. */
export async function expireIdleSessions(em: EntityManager, idleBefore: Date): Promise<number> {
  const result = await kyselyOf(em)
    .updateTable('sessions')
    .set({ status: 'expired' })
    .where('status', '=', 'active')
    .where('last_activity_at', '<', idleBefore)
    .executeTakeFirst();
  return Number(result.numUpdatedRows ?? 0n);
}
