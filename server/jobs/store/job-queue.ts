// Adds and removes graphile-worker jobs, always through a contract (../contracts.ts). Raw SQL:
// graphile_worker's own functions are not tables an ORM or Kysely could describe.
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { JobContract } from '../contracts.js';

/** `replace` (the default) moves a pending job's run_at; the other two keep the first job's. */
type JobKeyMode = 'replace' | 'preserve_run_at' | 'unsafe_dedupe';
type KeyedJob<P extends Record<string, unknown>> = JobContract<P> & { key: NonNullable<JobContract<P>['key']> };
/** The SqlPool, or one of its transactions. */
type SqlQuery = Pick<SqlPool, 'query'>;

/** The job key of `payload` under `job`'s contract; undefined when the job has no key. */
export function jobKeyOf<P extends Record<string, unknown>>(job: JobContract<P>, payload: P): string | undefined {
  return job.key ? `${job.key.prefix}${String(payload[job.key.field])}` : undefined;
}

// Raw(graphile-worker): its add_job function, with named arguments.
const ADD_JOB = 'select graphile_worker.add_job($1, $2::json, run_at => $3, job_key => $4, max_attempts => $5, queue_name => $6)';
/** The same for the ORM, whose placeholders are `?`. */
// Raw(graphile-worker): its add_job function, with named arguments.
const ADD_JOB_ORM = 'select graphile_worker.add_job(?, ?::json, run_at => ?, job_key => ?, max_attempts => ?, queue_name => ?)';
const addJobParams = <P extends Record<string, unknown>>(job: JobContract<P>, payload: P, runAt: Date | undefined) => [
  job.task, JSON.stringify(payload), runAt ?? null, jobKeyOf(job, payload) ?? null, job.maxAttempts,
  job.queue ? `${job.queue.prefix}${String(payload[job.queue.field])}` : null,
];

/**
 * Adds a job through the caller's EntityManager: inside a transaction the job exists exactly
 * when the rows it works on do.
 */
export async function enqueue<P extends Record<string, unknown>>(em: EntityManager, job: JobContract<P>, payload: P, options: { runAt?: Date } = {}): Promise<void> {
  await em.execute(ADD_JOB_ORM, addJobParams(job, payload, options.runAt));
}

/** `enqueue` on the SqlPool (or one of its transactions). */
export async function enqueueWith<P extends Record<string, unknown>>(sql: SqlQuery, job: JobContract<P>, payload: P, options: { runAt?: Date } = {}): Promise<void> {
  await sql.query(ADD_JOB, addJobParams(job, payload, options.runAt));
}

/** Removes the pending job of `job` whose key field is `keyValue` (none pending: nothing happens). */
export async function removeJob<P extends Record<string, unknown>>(em: EntityManager, job: KeyedJob<P>, keyValue: string): Promise<void> {
  // Raw(graphile-worker): its remove_job function.
  await em.execute('select graphile_worker.remove_job(?)', [`${job.key.prefix}${keyValue}`]);
}

/** The SQL expression of a job key: the contract's prefix joined to `keyExpression` (e.g. `id::text`). */
export function jobKeySql<P extends Record<string, unknown>>(job: KeyedJob<P>, keyExpression: string): string {
  return `'${job.key.prefix}' || ${keyExpression}`;
}

/** `graphile_worker.remove_job(...)` of the job whose key field is `keyExpression`, for a CTE. */
export function removeJobSql<P extends Record<string, unknown>>(job: KeyedJob<P>, keyExpression: string): string {
  // Raw(graphile-worker): its remove_job function.
  return `graphile_worker.remove_job(${jobKeySql(job, keyExpression)})`;
}

/**
 * The `graphile_worker.add_job(...)` call for statements that write a run and queue its job in
 * one round trip (a CTE). `fields` gives an SQL expression per payload field (e.g. `id::text`,
 * `$2::text`); the key is the contract's prefix joined to its key field's expression.
 */
export function addJobSql<P extends Record<string, unknown>>(
  job: JobContract<P>,
  fields: { [K in keyof P]?: string },
  options: { runAt?: string; keyMode?: JobKeyMode } = {},
): string {
  const payload = Object.entries(fields).map(([name, expression]) => `'${name}', ${expression as string}`).join(', ');
  const parts = [`'${job.task}'`, `json_build_object(${payload})`];
  if (options.runAt) parts.push(`run_at => ${options.runAt}`);
  parts.push(`max_attempts => ${job.maxAttempts}`);
  if (job.key) {
    const keyExpression = fields[job.key.field];
    if (!keyExpression) throw new Error(`addJobSql(${job.task}): the key field ${job.key.field} needs an expression`);
    parts.push(`job_key => ${jobKeySql(job as KeyedJob<P>, keyExpression)}`);
  }
  if (options.keyMode) parts.push(`job_key_mode => '${options.keyMode}'`);
  // Raw(graphile-worker): its add_job function, with named arguments.
  return `graphile_worker.add_job(${parts.join(', ')})`;
}
