// The agents feature's part of erasing one end user: their conversations (sessions, runs,
// transcripts) and what agents remember about them. Runs started by another run are found by the
// ids the starting run's steps name (see server/erasure), so these take ids as well as the user.
import type { EntityManager } from '../../db/orm.js';
import {
  countRunningUserAgentRuns, deleteAgentSessions, findAgentSessionsNamed, listRunIdsOfSessions, listUserAgentSessionIds,
} from './store/agent-runs.js';
import { deleteUserMemory } from './store/agent-user-memory.js';

/** Up to `limit` of the end user's agent sessions. */
export function takeUserAgentSessions(em: EntityManager, tenantId: string, userId: string, limit: number): Promise<string[]> {
  return listUserAgentSessionIds(em, tenantId, userId, limit);
}

/** How many of the end user's agent runs are executing now. */
export function countUserAgentRunsInFlight(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  return countRunningUserAgentRuns(em, tenantId, userId);
}

/** The agent sessions `ids` name: sessions by their own id, or by the id of one of their runs. */
export function findNamedAgentSessions(em: EntityManager, tenantId: string, ids: string[]): Promise<string[]> {
  return findAgentSessionsNamed(em, tenantId, ids);
}

/** The runs of those sessions. */
export function listAgentRunIds(em: EntityManager, tenantId: string, sessionIds: string[]): Promise<string[]> {
  return listRunIdsOfSessions(em, tenantId, sessionIds);
}

/** Deletes those sessions with their runs and transcripts (their steps are the caller's: run_steps). */
export function deleteAgentConversations(em: EntityManager, tenantId: string, sessionIds: string[]) {
  return deleteAgentSessions(em, tenantId, sessionIds);
}

/** Deletes the preferences and memories every agent of the tenant keeps about the end user. */
export function forgetUserMemory(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  return deleteUserMemory(em, tenantId, userId);
}
