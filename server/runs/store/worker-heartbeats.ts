// The worker_heartbeats rows of API and worker processes (`process:` ids) and their pruning;
// worker/runner.ts keeps its job runners' own rows.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';

/** Creates the process's row or marks it seen now. */
export async function upsertProcessHeartbeat(sql: SqlPool, processId: string): Promise<void> {
  // Raw: a hot statement on the SqlPool, run as a named prepared statement.
  await sql.query(
    `insert into worker_heartbeats (worker_id, started_at, last_seen_at) values ($1, now(), now())
       on conflict (worker_id) do update set last_seen_at = now()`,
    [processId],
    'liya_process_heartbeat',
  );
}

/** Removes the process's row. */
export async function deleteProcessHeartbeat(sql: SqlPool, processId: string): Promise<void> {
  // Raw: the SqlPool (the process's own connection pool, as the heartbeat uses) has no query builder.
  await sql.query('delete from worker_heartbeats where worker_id = $1', [processId]);
}

/** Deletes heartbeats not seen since `before`; returns how many. */
export async function deleteHeartbeatsSeenBefore(em: EntityManager, before: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('worker_heartbeats').where('last_seen_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
