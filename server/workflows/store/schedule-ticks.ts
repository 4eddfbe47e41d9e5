// The workflow_schedule_ticks table (a tick is recorded by the guard of its run's insert); this
// module alone writes it.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/**
 * The guard of a tick's run insert (run-admission's createQueuedRun): records the tick, and returns
 * a row only the first time, so any number of processes start a tick's run once.
 */
export function scheduleTickGuard(workflowId: string, tick: Date): { text: string; params: unknown[] } {
  // Raw: it becomes a CTE of run-admission's one-round-trip insert on the SqlPool.
  return { text: 'insert into workflow_schedule_ticks (workflow_id, tick_at, created_at) values ($1, $2, now()) on conflict do nothing returning 1', params: [workflowId, tick] };
}

export async function deleteScheduleTicksBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('workflow_schedule_ticks').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
