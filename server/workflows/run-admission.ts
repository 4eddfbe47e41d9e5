// Letting a run in: the workflow's max_concurrent_runs, decided in PostgreSQL (a transaction-scoped
// advisory lock per workflow, then a count), so it holds under a burst and across processes; and
// queued runs (webhook, event, schedule, async), written with their job in one statement.
import type { SqlPool } from '../../db/sql-pool.js';
import { AppError } from '../errors.js';
import { INSERT_RUN_SQL, newRunValues, type CreateRunOptions, type RunTarget } from './engine/run-workflow.js';

/** Statuses that hold one of a workflow's concurrent-run slots. */
export const ACTIVE_RUN_STATUSES = "('running', 'waiting')";

export const concurrencyLimit = (limit: number) =>
  new AppError('CONCURRENCY_LIMIT', `The workflow already has ${limit} active run(s), its max_concurrent_runs`, { max_concurrent_runs: limit, retry_after_seconds: 1 }, { 'Retry-After': '1' });

/**
 * Runs `write` when the workflow has a free slot: without a limit straight away, with one inside a
 * transaction that holds the workflow's advisory lock while it counts (the count runs after the
 * lock is taken, so it sees every run committed before). False when the workflow is full.
 */
export async function withinRunLimit(sql: SqlPool, workflowId: string, limit: number | null, write: (query: SqlPool['query']) => Promise<void>): Promise<boolean> {
  if (limit === null) {
    await write(sql.query);
    return true;
  }
  return sql.transaction(async (query) => {
    await query('select pg_advisory_xact_lock(hashtextextended($1::text, 20261123))', [workflowId]);
    const [row] = await query<{ n: number }>(`select count(*)::int as n from workflow_runs where workflow_id = $1 and status in ${ACTIVE_RUN_STATUSES}`, [workflowId]);
    if (row.n >= limit) return false;
    await write(query);
    return true;
  });
}

/** Renumbers `$n` placeholders so statements can be combined. */
const shiftParams = (text: string, by: number) => text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + by}`);

export interface QueuedRunGuard {
  /** An `insert ... returning 1` that must succeed for the run to be created (an idempotency key, a schedule tick). */
  text: string;
  params: unknown[];
}

export type QueuedRunOutcome = { status: 'created'; runId: string; conversationId: string } | { status: 'duplicate' } | { status: 'limited' };

/**
 * Creates a run a job will execute: the guard row, the run and its job in one statement (all or
 * nothing), committed durably before the caller answers.
 */
export async function createQueuedRun(
  sql: SqlPool,
  target: RunTarget,
  input: Record<string, unknown>,
  options: CreateRunOptions & { limit: number | null; guard?: QueuedRunGuard },
): Promise<QueuedRunOutcome> {
  const { stored, params } = newRunValues(target, input, options);
  const guard = options.guard ?? { text: 'select 1', params: [] };
  const offset = guard.params.length;
  const text = `
    with guard as (${guard.text}),
    run as (${shiftParams(INSERT_RUN_SQL, offset).replace(/values \((.*)\)\s*$/s, 'select $1 where exists (select 1 from guard)')} returning id),
    job as (select graphile_worker.add_job('workflow_continue', json_build_object('run_id', id::text, 'tenant_id', $${offset + 2}::text), max_attempts => 10, job_key => 'wf-run:' || id::text) from run)
    select (select count(*) from guard)::int as guarded, (select count(*) from job)::int as queued`;
  let outcome: QueuedRunOutcome = { status: 'limited' };
  const admitted = await withinRunLimit(sql, target.workflow.id, options.limit, async (query) => {
    const [row] = await query<{ guarded: number; queued: number }>(text, [...guard.params, ...params, null]);
    outcome = row.queued > 0 ? { status: 'created', runId: stored.id, conversationId: stored.conversationId } : { status: 'duplicate' };
  });
  return admitted ? outcome : { status: 'limited' };
}
