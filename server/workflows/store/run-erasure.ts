// Erasing one end user's workflow runs: finding the runs whose input names them, and deleting runs
// with their workflow_approvals. Part of the workflow_runs table's writes (see run-intake.ts: the
// run-*.ts modules share them by statement family); unlike the others it runs through Kysely in the
// erasure's own transaction (an EntityManager), not on the SqlPool.
import { sql } from 'kysely';
import { anyId } from '../../../db/id-list.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

// The runs whose input names the end user: `input ? 'user_id'` repeats the partial index's
// predicate, so the planner may take (tenant_id, input->>'user_id').
const userRuns = (em: EntityManager, tenantId: string, userId: string) =>
  kyselyOf(em)
    .selectFrom('workflow_runs')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`input ? 'user_id'`)
    .where(sql<string>`input ->> 'user_id'`, '=', userId);

/** Up to `limit` of the runs whose input's `user_id` is the end user. */
export async function listUserRunIds(em: EntityManager, tenantId: string, userId: string, limit: number): Promise<string[]> {
  const rows = await userRuns(em, tenantId, userId).select('id').limit(limit).execute();
  return rows.map((r) => r.id);
}

/** How many of those runs are executing now. */
export async function countRunningUserRuns(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  const row = await userRuns(em, tenantId, userId).select(sql<number>`count(*)::int`.as('n')).where('status', '=', 'running').executeTakeFirstOrThrow();
  return row.n;
}

/** The tenant's runs among `ids`. */
export async function findRunsNamed(em: EntityManager, tenantId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await kyselyOf(em).selectFrom('workflow_runs').select('id').where('tenant_id', '=', tenantId).where(anyId('id', ids)).execute();
  return rows.map((r) => r.id);
}

/**
 * Deletes the tenant's runs `ids` with their approvals; how many of each. A job still queued for one
 * of them finds no run and ends (every task is written for that).
 */
export async function deleteRunsWithApprovals(em: EntityManager, tenantId: string, ids: string[]): Promise<{ runs: number; approvals: number }> {
  if (!ids.length) return { runs: 0, approvals: 0 };
  const db = kyselyOf(em);
  // The approvals by their own statement, so they are counted (the foreign key would take them silently).
  const approvals = await db.deleteFrom('workflow_approvals').where('tenant_id', '=', tenantId).where(anyId('run_id', ids)).executeTakeFirst();
  const runs = await db.deleteFrom('workflow_runs').where('tenant_id', '=', tenantId).where(anyId('id', ids)).executeTakeFirst();
  return { runs: Number(runs.numDeletedRows ?? 0n), approvals: Number(approvals.numDeletedRows ?? 0n) };
}
