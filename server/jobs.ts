import type { EntityManager } from '../db/orm.js';

export interface EnqueueOptions {
  /** Run no earlier than this (default: now). */
  runAt?: Date;
  /** Deduplicates: a pending job with the same key is replaced. */
  jobKey?: string;
  maxAttempts?: number;
}

/**
 * Adds a graphile-worker job through the caller's EntityManager, so that inside a transaction the
 * job exists exactly when the rows it works on do.
 */
export async function enqueueJob(em: EntityManager, task: string, payload: Record<string, unknown>, options: EnqueueOptions = {}): Promise<void> {
  await em.execute('select graphile_worker.add_job(?, ?::json, run_at => ?, job_key => ?, max_attempts => ?)', [
    task,
    JSON.stringify(payload),
    options.runAt ?? null,
    options.jobKey ?? null,
    options.maxAttempts ?? 10,
  ]);
}
