// The workflow_schedule_ticks table (a tick is recorded by the guard of its run's insert) and the
// schedule's pending graphile-worker job; this module alone writes them.
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

/** Removes the schedule's pending job, if any; in `em`'s transaction. */
export async function removeScheduleJob(em: EntityManager, jobKey: string): Promise<void> {
  // Raw: a graphile_worker function.
  await em.execute('select graphile_worker.remove_job(?)', [jobKey]);
}

/** Plans the schedule's next tick (a pending job with the same key is replaced). */
export async function addScheduleTickJob(sql: SqlPool, payload: { workflow_id: string; tenant_id: string; tick: string }, runAt: Date, jobKey: string): Promise<void> {
  // Raw: a graphile_worker function (kept verbatim: job contracts replace it separately).
  await sql.query(`select graphile_worker.add_job('workflow_schedule', $1::json, run_at => $2, job_key => $3, max_attempts => 5)`, [
    JSON.stringify(payload), runAt, jobKey,
  ]);
}

/**
 * The guard of a tick's run insert (run-admission's createQueuedRun): records the tick, and returns
 * a row only the first time, so any number of processes start a tick's run once.
 */
export function scheduleTickGuard(workflowId: string, tick: Date): { text: string; params: unknown[] } {
  // Raw: it becomes a CTE of run-admission's one-round-trip insert on the SqlPool.
  return { text: 'insert into workflow_schedule_ticks (workflow_id, tick_at, created_at) values ($1, $2, now()) on conflict do nothing returning 1', params: [workflowId, tick] };
}
