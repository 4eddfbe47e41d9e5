// A tenant's jobs in graphile-worker's queue: found for an export, added back by an import, removed
// by a deletion. Raw SQL: graphile_worker's own tables and functions, which no entity maps. A job
// is the tenant's when its payload carries the tenant's id, or names a row of the tenant
// (TENANT_JOB_LINKS); the platform's own jobs (PLATFORM_TASKS) never are.
import type { SqlPool } from '../../../db/sql-pool.js';
import { LEFT_OUT_TABLES, TENANT_JOB_LINKS } from '../tenant-archive.js';
import { ident } from './tenant-catalog.js';

type Query = SqlPool['query'];

const UUID_TEXT = `'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'`;

/**
 * The condition on jobs `j` (tasks `tk`) selecting the tenant's (`param`): by the payload's tenant_id
 * unless `byTenantId` is false, and by the row each of `links` names.
 */
function tenantJobsSql(param: string, links: [string, { field: string; table: string }][], byTenantId = true): string {
  const linked = links.map(([task, link]) => {
    const value = `j.payload ->> '${link.field}'`;
    // Compared as a uuid (the row's primary key index), and cast only when it is one: a case, since
    // the planner may evaluate the conditions of an `and` in any order.
    const id = `case when ${value} ~ ${UUID_TEXT} then (${value})::uuid end`;
    return `(tk.identifier = '${task}' and exists (select 1 from ${ident(link.table)} x where x.id = ${id} and x.tenant_id = ${param}::uuid))`;
  });
  const conditions = [...(byTenantId ? [`j.payload ->> 'tenant_id' = ${param}::text`] : []), ...linked];
  return conditions.length ? `(${conditions.join(' or ')})` : 'false';
}

const ALL_LINKS = Object.entries(TENANT_JOB_LINKS);
// An archive holds only jobs whose rows it holds.
const EXPORTED_LINKS = ALL_LINKS.filter(([, link]) => !(link.table in LEFT_OUT_TABLES));

const JOBS_FROM = `graphile_worker._private_jobs j join graphile_worker._private_tasks tk on tk.id = j.task_id`;

/**
 * The tenant's jobs still to run (a job that used up its attempts is history, not work), as archive
 * rows (JSON text), in the order they were queued. The payload is read as jsonb: one spelling of it,
 * whatever the enqueuer wrote.
 */
export async function selectArchivedJobs(query: Query, tenantId: string): Promise<string[]> {
  // Raw(graphile-worker): its private jobs, tasks and queues tables.
  const rows = await query<{ job: string }>(
    `select json_build_object('task', tk.identifier, 'payload', j.payload::jsonb, 'run_at', j.run_at, 'job_key', j.key,
                              'max_attempts', j.max_attempts, 'priority', j.priority, 'queue_name', q.queue_name)::text as job
       from ${JOBS_FROM} left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
      where ${tenantJobsSql('$1', EXPORTED_LINKS)} and j.attempts < j.max_attempts
      order by j.id`,
    [tenantId],
  );
  return rows.map((r) => r.job);
}

/** A job of an archive, as its row reads. */
export interface ArchivedJob {
  task: string;
  payload: unknown;
  run_at: string | null;
  job_key: string | null;
  max_attempts: number | null;
  priority: number | null;
  queue_name: string | null;
}

/** Queues an archived job again (its key, if any, replaces a pending job of the same key). */
export async function addArchivedJob(query: Query, job: ArchivedJob): Promise<void> {
  // Raw(graphile-worker): its add_job function, with named arguments.
  await query(
    `select graphile_worker.add_job($1, $2::json, queue_name => $3, run_at => $4::timestamptz, max_attempts => $5::int, job_key => $6, priority => $7::int)`,
    [job.task, JSON.stringify(job.payload), job.queue_name, job.run_at, job.max_attempts, job.job_key, job.priority],
  );
}

/** Whether the row a linked job names belongs to the tenant (an archive may only queue the tenant's work). */
export async function jobRowBelongsTo(query: Query, tenantId: string, task: string, payload: Record<string, unknown>): Promise<boolean> {
  const link = TENANT_JOB_LINKS[task];
  const id = link ? payload[link.field] : undefined;
  if (!link || typeof id !== 'string') return false;
  // Raw(graphile-worker): the row a queued job names, in the table its task's link declares.
  const [row] = await query<{ ok: boolean }>(
    `select exists (select 1 from ${ident(link.table)} x where x.id::text = $1 and x.tenant_id = $2) as ok`,
    [id, tenantId],
  );
  return row.ok;
}

/**
 * The ids of the tenant's jobs that name one of its rows instead of the tenant: read before the rows
 * go, since afterwards nothing says whose they were.
 */
export async function selectLinkedJobIds(query: Query, tenantId: string): Promise<string[]> {
  if (!ALL_LINKS.length) return [];
  // Raw(graphile-worker): its private jobs and tasks tables.
  const rows = await query<{ id: string }>(`select j.id::text as id from ${JOBS_FROM} where ${tenantJobsSql('$1', ALL_LINKS, false)}`, [tenantId]);
  return rows.map((r) => r.id);
}

/**
 * Removes the tenant's jobs (and those of `ids`) that no worker holds now, through graphile-worker's
 * own complete_jobs; answers how many went and how many a worker still holds.
 */
export async function removeTenantJobs(query: Query, tenantId: string, ids: string[]): Promise<{ removed: number; held: number }> {
  // Raw(graphile-worker): its private tables and its complete_jobs function.
  const [row] = await query<{ removed: number; held: number }>(
    `with mine as (
       select j.id, j.locked_at from ${JOBS_FROM}
        where ${tenantJobsSql('$1', ALL_LINKS)} or j.id = any($2::bigint[])
     ), gone as (
       select id from graphile_worker.complete_jobs(array(select id from mine where locked_at is null))
     )
     select (select count(*)::int from gone) as removed, (select count(*)::int from mine where locked_at is not null) as held`,
    [tenantId, ids],
  );
  return row;
}
