// The sessions feature's part of erasing one end user: their intent sessions and transcripts go
// in batches; each batch's messages are handed back first, so the caller can forget what the
// intent cache holds of them in the same transaction.
import type { EntityManager } from '../../db/orm.js';
import { deleteSessionsWithMessages, listUserSessionBatch, type ErasedSessionMessage } from './store/sessions.js';

/** Up to `limit` of the end user's sessions (ids) with all their messages; no ids when none is left. */
export function takeUserSessions(em: EntityManager, tenantId: string, userId: string, limit: number): Promise<{ ids: string[]; messages: ErasedSessionMessage[] }> {
  return listUserSessionBatch(em, tenantId, userId, limit);
}

/** Deletes those sessions with their messages; how many of each. */
export function deleteUserSessions(em: EntityManager, tenantId: string, ids: string[]): Promise<{ sessions: number; messages: number }> {
  return deleteSessionsWithMessages(em, tenantId, ids);
}
