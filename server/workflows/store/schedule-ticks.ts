// The workflow_schedule_ticks table (a tick is recorded by the guard of its run's insert); this
// module alone writes it: run-intake.ts embeds recordTickInsert as that guard.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import { build } from '../../../db/statements.js';
import type { EntityManager } from '../../../db/orm.js';

/**
 * The guard of a tick's run insert (a CTE of run-intake's one-round-trip statement): records the
 * tick, and returns a row only the first time, so any number of processes start a tick's run once.
 */
export const recordTickInsert = (tick: { workflowId: string; tickAt: Date }) =>
  build
    .insertInto('workflow_schedule_ticks')
    .values({ workflow_id: tick.workflowId, tick_at: tick.tickAt, created_at: sql<Date>`now()` })
    .onConflict((oc) => oc.doNothing())
    .returning(sql.lit(1).as('one'));

export async function deleteScheduleTicksBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('workflow_schedule_ticks').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
