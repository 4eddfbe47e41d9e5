// Letting a run in: the workflow's max_concurrent_runs, decided in PostgreSQL (a transaction-scoped
// advisory lock per workflow, then a count), so it holds under a burst and across processes; and
// queued runs (webhook, event, schedule, async), written in one statement with their guard row and,
// unless this process executes them itself, their job.
import type { SqlPool } from '../../db/sql-pool.js';
import type { AppDeps } from '../deps.js';
import { PROCESS_ID } from '../runs/process-identity.js';
import { AppError, isDatabaseUnavailable } from '../errors.js';
import { INSERT_RUN_SQL, newRunValues, type CreateRunOptions } from './engine/run-workflow.js';
import type { RunTarget } from './engine/run-types.js';

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
 * Creates a queued run: the guard row and the run in one statement (all or nothing), committed
 * durably before the caller answers. When this process runs the job runner and its local queue has
 * room, the run is written owned by this process and executed by it (local-runs.ts); otherwise a job
 * is added in the same statement and any worker takes it. That job's run is new, so no job can hold
 * its key yet: it is added in graphile-worker's plain-insert mode (`unsafe_dedupe`), which skips the
 * default mode's update of running jobs with the same key (1.5-2.5 ms a call with a backlog of a few
 * thousand jobs in the webhooks benchmark).
 */
export async function createQueuedRun(
  deps: Pick<AppDeps, 'sql' | 'localRuns'>,
  target: RunTarget,
  input: Record<string, unknown>,
  options: CreateRunOptions & { limit: number | null; guard?: QueuedRunGuard },
): Promise<QueuedRunOutcome> {
  const local = deps.localRuns?.hasRoom() ? deps.localRuns : null;
  const { stored, params } = newRunValues(target, input, options);
  const guard = options.guard ?? { text: 'select 1', params: [] };
  const offset = guard.params.length;
  const text = `
    with guard as (${guard.text}),
    run as (${shiftParams(INSERT_RUN_SQL, offset).replace(/values \((.*)\)\s*$/s, 'select $1 where exists (select 1 from guard)')} returning id),
    job as (select graphile_worker.add_job('workflow_continue', json_build_object('run_id', id::text, 'tenant_id', $${offset + 2}::text), max_attempts => 10,
                                           job_key => 'wf-run:' || id::text, job_key_mode => 'unsafe_dedupe') from run where $${offset + 16}::boolean)
    select (select count(*) from guard)::int as guarded, (select count(*) from run)::int as created, (select count(*) from job)::int as queued`;
  let outcome: QueuedRunOutcome = { status: 'limited' };
  let admitted: boolean;
  try {
    admitted = await withinRunLimit(deps.sql, target.workflow.id, options.limit, async (query) => {
      // `queued` is selected so the job CTE runs (a SELECT CTE nobody reads is never evaluated).
      const [row] = await query<{ guarded: number; created: number; queued: number }>(text, [...guard.params, ...params, local ? PROCESS_ID : null, !local]);
      outcome = row.created > 0 ? { status: 'created', runId: stored.id, conversationId: stored.conversationId } : { status: 'duplicate' };
    });
  } catch (err) {
    // A connection lost around the commit leaves it unknown whether the run was written (owned by
    // this process, which would then never run it): hand it over, which does nothing if it was not.
    if (local && isDatabaseUnavailable(err)) local.handOver([{ target, stored }]);
    throw err;
  }
  if (!admitted) return { status: 'limited' };
  const written = outcome as QueuedRunOutcome;
  if (local && written.status === 'created') local.push({ target, stored });
  return written;
}
