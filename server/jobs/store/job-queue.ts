// Adds and removes graphile-worker jobs. Raw SQL: graphile_worker's own functions are not tables
// an ORM or Kysely could describe. Every job goes through a contract (../contracts.ts).
import type { EntityManager } from '../../../db/orm.js';
import type { JobContract } from '../contracts.js';

/** `replace` (the default) moves a pending job's run_at; the other two keep the first job's. */
export type JobKeyMode = 'replace' | 'preserve_run_at' | 'unsafe_dedupe';

/** The job key of `payload` under `job`'s contract; undefined when the job has no key. */
export function jobKeyOf<P extends Record<string, unknown>>(job: JobContract<P>, payload: P): string | undefined {
  return job.key ? `${job.key.prefix}${String(payload[job.key.field])}` : undefined;
}

/**
 * Adds a job through the caller's EntityManager: inside a transaction the job exists exactly
 * when the rows it works on do.
 */
export async function enqueue<P extends Record<string, unknown>>(em: EntityManager, job: JobContract<P>, payload: P, options: { runAt?: Date } = {}): Promise<void> {
  await em.execute('select graphile_worker.add_job(?, ?::json, run_at => ?, job_key => ?, max_attempts => ?)', [
    job.task,
    JSON.stringify(payload),
    options.runAt ?? null,
    jobKeyOf(job, payload) ?? null,
    job.maxAttempts,
  ]);
}

/** Removes the pending job of `job` whose key field is `keyValue` (none pending: nothing happens). */
export async function removeJob<P extends Record<string, unknown>>(em: EntityManager, job: JobContract<P> & { key: NonNullable<JobContract<P>['key']> }, keyValue: string): Promise<void> {
  await em.execute('select graphile_worker.remove_job(?)', [`${job.key.prefix}${keyValue}`]);
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
    parts.push(`job_key => '${job.key.prefix}' || ${keyExpression}`);
  }
  if (options.keyMode) parts.push(`job_key_mode => '${options.keyMode}'`);
  return `graphile_worker.add_job(${parts.join(', ')})`;
}
