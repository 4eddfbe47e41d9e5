// What the metrics read when Prometheus scrapes: the job queue (graphile_worker's tables), the
// ingestion backlog and the ORM's connection pool. Read-only; this module writes nothing.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

export interface JobQueueRow {
  task: string;
  ready: number;
  scheduled: number;
  running: number;
  failed: number;
  oldest_ready_seconds: number;
}

/**
 * Each task's jobs by state, and how long its oldest ready job has waited. Every task a worker has
 * registered has a row (zeros when it has no job), so the series exist before the first job.
 */
export async function selectJobQueueDepth(em: EntityManager): Promise<JobQueueRow[]> {
  // Raw(graphile-worker): graphile_worker's own tables, which no entity maps. A running job has already used its
  // last attempt, so "failed" is out of attempts and unlocked.
  return em.execute<JobQueueRow[]>(
    `select t.identifier as task,
            count(j.id) filter (where j.locked_at is null and j.attempts < j.max_attempts and j.run_at <= now())::int as ready,
            count(j.id) filter (where j.locked_at is null and j.attempts < j.max_attempts and j.run_at > now())::int as scheduled,
            count(j.id) filter (where j.locked_at is not null)::int as running,
            count(j.id) filter (where j.locked_at is null and j.attempts >= j.max_attempts)::int as failed,
            coalesce(extract(epoch from now() - min(j.run_at) filter (where j.locked_at is null and j.attempts < j.max_attempts and j.run_at <= now())), 0)::float8 as oldest_ready_seconds
       from graphile_worker._private_tasks t
       left join graphile_worker._private_jobs j on j.task_id = t.id
      group by t.identifier`,
  );
}

/** Ingestion jobs pending and running (every tenant), and the oldest pending one's wait in seconds. */
export async function selectIngestionBacklog(em: EntityManager): Promise<{ pending: number; running: number; oldest_pending_seconds: number }> {
  return kyselyOf(em)
    .selectFrom('ingestion_jobs')
    .select([
      sql<number>`count(*) filter (where status = 'pending')::int`.as('pending'),
      sql<number>`count(*) filter (where status = 'running')::int`.as('running'),
      sql<number>`coalesce(extract(epoch from now() - min(created_at) filter (where status = 'pending')), 0)::float8`.as('oldest_pending_seconds'),
    ])
    .where('status', 'in', ['pending', 'running'])
    .executeTakeFirstOrThrow();
}

/** Online evaluation: enabled monitors by state, and the sampled runs waiting for the intake (every tenant). */
export async function selectOnlineEvalReadings(em: EntityManager): Promise<{ firing: number; ok: number; queued: number; oldest_queued_seconds: number }> {
  const db = kyselyOf(em);
  const [monitors, queue] = await Promise.all([
    db.selectFrom('eval_monitors')
      .select([sql<number>`count(*) filter (where state = 'firing')::int`.as('firing'), sql<number>`count(*) filter (where state = 'ok')::int`.as('ok')])
      .where('enabled', '=', true)
      .executeTakeFirstOrThrow(),
    db.selectFrom('online_eval_samples')
      .select([sql<number>`count(*)::int`.as('queued'), sql<number>`coalesce(extract(epoch from now() - min(created_at)), 0)::float8`.as('oldest_queued_seconds')])
      .executeTakeFirstOrThrow(),
  ]);
  return { ...monitors, ...queue };
}

/** The ORM's `pg` pool: its open, idle and waiting counts and its size. */
export async function readOrmPool(em: EntityManager): Promise<{ total: number; idle: number; waiting: number; max: number }> {
  const pool = await em.getConnection().getNativeClient();
  return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max ?? 10 };
}
