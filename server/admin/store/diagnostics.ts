// Read-only probes for the operator's diagnostics: the database server, the job queue
// (graphile_worker's tables) and the workers' heartbeats. This module writes nothing.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** The PostgreSQL server's version string. */
export async function selectServerVersion(em: EntityManager): Promise<string> {
  // current_setting answers what `show server_version` does.
  const row = await kyselyOf(em).selectNoFrom(sql<string>`current_setting('server_version')`.as('server_version')).executeTakeFirstOrThrow();
  return row.server_version;
}

export interface JobRunnerRow {
  schema: boolean;
  live_workers: number;
}

/** Whether graphile_worker's schema is installed, and how many workers beat within `liveWorkerSeconds`. */
export async function selectJobRunnerState(em: EntityManager, liveWorkerSeconds: number): Promise<JobRunnerRow> {
  // Raw(graphile-worker): it asks the catalog about graphile_worker's tables (no entity maps them), in one round trip with the heartbeat count.
  const [runner] = await em.execute<JobRunnerRow[]>(
    `select to_regclass('graphile_worker._private_jobs') is not null as schema,
            (select count(*)::int from worker_heartbeats where last_seen_at > now() - make_interval(secs => ?) and worker_id not like 'process:%') as live_workers`,
    [liveWorkerSeconds],
  );
  return runner;
}

export interface QueueRow {
  ready: number;
  oldest_wait_seconds: number | null;
}

/** Jobs ready to run that no worker has picked up, and how long the oldest has waited. */
export async function selectJobQueueBacklog(em: EntityManager): Promise<QueueRow> {
  // Raw(graphile-worker): graphile_worker's own table, which no entity maps.
  const [queue] = await em.execute<QueueRow[]>(
    `select count(*)::int as ready, extract(epoch from now() - min(run_at))::int as oldest_wait_seconds
           from graphile_worker._private_jobs
          where locked_at is null and run_at <= now() and attempts < max_attempts`,
  );
  return queue;
}
