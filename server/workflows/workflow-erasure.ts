// The workflows feature's part of erasing one end user: the runs whose input names them (with
// their approvals and the idempotency keys that keep their answers), and saved values that name
// them. Runs another run started are found by id (see server/erasure).
import type { EntityManager } from '../../db/orm.js';
import type { MentionPatterns } from '../common/mentions.js';
import { deleteKeysOfRuns } from './store/idempotency-keys.js';
import { deleteStateMentioning } from './store/workflow-state.js';
import { countRunningUserRuns, deleteRunsWithApprovals, findRunsNamed, listUserRunIds } from './store/run-erasure.js';

/** Up to `limit` of the runs whose input's `user_id` is the end user. */
export function takeUserWorkflowRuns(em: EntityManager, tenantId: string, userId: string, limit: number): Promise<string[]> {
  return listUserRunIds(em, tenantId, userId, limit);
}

/** How many of those runs are executing now. */
export function countUserWorkflowRunsInFlight(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  return countRunningUserRuns(em, tenantId, userId);
}

/** The tenant's workflow runs among `ids`. */
export function findNamedWorkflowRuns(em: EntityManager, tenantId: string, ids: string[]): Promise<string[]> {
  return findRunsNamed(em, tenantId, ids);
}

/** Deletes those runs with their approvals and idempotency keys (their steps are the caller's: run_steps). */
export async function deleteWorkflowRuns(em: EntityManager, tenantId: string, runIds: string[]) {
  const keys = await deleteKeysOfRuns(em, tenantId, runIds);
  const { runs, approvals } = await deleteRunsWithApprovals(em, tenantId, runIds);
  return { runs, approvals, keys };
}

/** Deletes the tenant's saved workflow values whose key or value names the end user. */
export function forgetStateAbout(em: EntityManager, tenantId: string, patterns: MentionPatterns): Promise<number> {
  return deleteStateMentioning(em, tenantId, patterns);
}
