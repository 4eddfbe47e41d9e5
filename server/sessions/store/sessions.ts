// The sessions and session_messages tables (end users' conversations with the intents): their reads,
// their expiry and the erasure of one end user's. A run's turn is written in the intent run's one
// statement (intents/store/run-record.ts).
import { Session, SessionMessage, type ISession, type ISessionMessage } from '../../../db/entities/session.js';
import { anyId } from '../../../db/id-list.js';
import { kyselyOf } from '../../../db/kysely.js';
import { countCapped, newestFirstPage } from '../../../db/keyset.js';
import type { EntityManager } from '../../../db/orm.js';
import type { PageRequest } from '../../common/pagination.js';
import { sql } from 'kysely';

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

/** The tenant's sessions with the filters given, each filter an equality its index begins with. */
function tenantSessions(em: EntityManager, tenantId: string, filter: { status?: ISession['status']; domain?: string }) {
  return kyselyOf(em)
    .selectFrom('sessions')
    .where('tenant_id', '=', tenantId)
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status!))
    .$if(filter.domain !== undefined, (qb) => qb.where('domain', '=', filter.domain!));
}

/**
 * One page of the tenant's sessions, most recently active first (ties by id), and one more when
 * there is a next page; on (tenant_id[, status | domain], last_activity_at desc, id desc), from the
 * offset or the cursor. Each session comes with its exact sort key (`cursorKey`).
 */
export async function listTenantSessions(
  em: EntityManager,
  tenantId: string,
  filter: { status?: ISession['status']; domain?: string },
  page: PageRequest,
): Promise<{ session: ISession; cursorKey: string }[]> {
  const rows = await newestFirstPage(tenantSessions(em, tenantId, filter).selectAll(), 'last_activity_at', page).execute();
  return rows.map(({ cursor_key, ...columns }) => ({ session: em.map(Session, columns), cursorKey: cursor_key }));
}

/** How many of the tenant's sessions match, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countTenantSessions(em: EntityManager, tenantId: string, filter: { status?: ISession['status']; domain?: string }, cap: number): Promise<number> {
  return countCapped(kyselyOf(em), tenantSessions(em, tenantId, filter).select(sql.lit(1).as('one')), cap);
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

/** A message of a session being erased: enough to find the cached answers it produced or read. */
export interface ErasedSessionMessage {
  domain: string;
  intent: string | null;
  role: 'user' | 'assistant';
  content: unknown;
}

/** Up to `limit` of the end user's sessions (their ids) with every message of them. */
export async function listUserSessionBatch(em: EntityManager, tenantId: string, userId: string, limit: number): Promise<{ ids: string[]; messages: ErasedSessionMessage[] }> {
  const db = kyselyOf(em);
  // On (tenant_id, user_id).
  const sessions = await db.selectFrom('sessions').select(['id', 'domain']).where('tenant_id', '=', tenantId).where('user_id', '=', userId).limit(limit).execute();
  if (!sessions.length) return { ids: [], messages: [] };
  const domains = new Map(sessions.map((s) => [s.id, s.domain]));
  const messages = await db
    .selectFrom('session_messages')
    .select(['session_id', 'intent', 'role', 'content'])
    .where(anyId('session_id', [...domains.keys()]))
    .execute();
  return {
    ids: [...domains.keys()],
    messages: messages.map((m) => ({ domain: domains.get(m.session_id)!, intent: m.intent ?? null, role: m.role, content: m.content })),
  };
}

/** Deletes the tenant's sessions `ids` and their messages; answers how many of each. */
export async function deleteSessionsWithMessages(em: EntityManager, tenantId: string, ids: string[]): Promise<{ sessions: number; messages: number }> {
  if (!ids.length) return { sessions: 0, messages: 0 };
  const db = kyselyOf(em);
  // The messages first, by their own statement, so they are counted (the foreign key would take them silently).
  const messages = await db.deleteFrom('session_messages').where('tenant_id', '=', tenantId).where(anyId('session_id', ids)).executeTakeFirst();
  const sessions = await db.deleteFrom('sessions').where('tenant_id', '=', tenantId).where(anyId('id', ids)).executeTakeFirst();
  return { sessions: Number(sessions.numDeletedRows ?? 0n), messages: Number(messages.numDeletedRows ?? 0n) };
}
