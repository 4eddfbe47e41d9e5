// The worker_heartbeats table: the rows of API and worker processes (`process:` ids), of the job
// runners (worker/runner.ts), and their pruning; this module alone writes it.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { Pool } from 'pg';

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

/** The job runner's own pool (graphile-worker wants a `pg.Pool` of its own). */
type RunnerPool = Pick<Pool, 'query'>;

/** Creates the job runners' rows or marks them seen now. */
export async function upsertRunnerHeartbeats(pool: RunnerPool, runnerIds: string[]): Promise<void> {
  // Raw: the runner's own pg.Pool has no query builder.
  await pool.query(
    `insert into worker_heartbeats (worker_id, started_at, last_seen_at) select unnest($1::text[]), now(), now()
       on conflict (worker_id) do update set last_seen_at = now()`,
    [runnerIds],
  );
}

/** Removes the job runners' rows. */
export async function deleteRunnerHeartbeats(pool: RunnerPool, runnerIds: string[]): Promise<void> {
  // Raw: the runner's own pg.Pool has no query builder.
  await pool.query('delete from worker_heartbeats where worker_id = any($1::text[])', [runnerIds]);
}

/** The lock owners of graphile-worker jobs whose heartbeat is older than `staleSeconds` (or absent). */
export async function selectDeadLockOwners(pool: RunnerPool, staleSeconds: number): Promise<string[]> {
  // Raw: graphile_worker's own table, which no entity maps.
  const { rows } = await pool.query<{ locked_by: string }>(
    `select distinct j.locked_by from graphile_worker._private_jobs j
      where j.locked_by is not null
        and not exists (select 1 from worker_heartbeats h where h.worker_id = j.locked_by and h.last_seen_at > now() - make_interval(secs => $1))`,
    [staleSeconds],
  );
  return rows.map((r) => r.locked_by);
}
