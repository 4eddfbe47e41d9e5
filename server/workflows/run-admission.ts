// Letting a run in: the workflow's max_concurrent_runs, decided in PostgreSQL (a transaction-scoped
// advisory lock per workflow, then a count), so it holds under a burst and across processes; and
// queued runs (webhook, event, schedule, async), written in one statement with their guard row, their
// trigger step and, unless this process executes them itself, their job. Queued runs with no slot to
// count share that statement with the others accepted at the same moment (queued-run-writes.ts).
import type { AppDeps } from '../deps.js';
import { PROCESS_ID } from '../runs/process-identity.js';
import { AppError, isDatabaseUnavailable } from '../errors.js';
import { completeTriggerAtIntake, newRunValues, type CreateRunOptions } from './engine/run-start.js';
import { limitsForPlan } from '../tenants/plan-limits.js';
import type { RunTarget } from './engine/run-types.js';
import { insertQueuedRun, withinRunLimit, type QueuedRunGuard, type QueuedRunValues } from './store/run-intake.js';
import { writeQueuedRun } from './queued-run-writes.js';

export const concurrencyLimit = (limit: number) =>
  new AppError('CONCURRENCY_LIMIT', `The workflow already has ${limit} active run(s), its max_concurrent_runs`, { max_concurrent_runs: limit, retry_after_seconds: 1 }, { 'Retry-After': '1' });

export type QueuedRunOutcome = { status: 'created'; runId: string; conversationId: string } | { status: 'duplicate' } | { status: 'limited' };

/**
 * Creates a queued run: the guard row, the run and its trigger step in one statement (all or
 * nothing), committed durably before the caller answers. When this process runs the job runner and
 * its local queue has room, the run is written owned by this process and executed by it
 * (local-runs.ts); otherwise a job is added in the same statement and any worker takes it. That
 * job's run is new, so no job can hold its key yet: it is added in graphile-worker's plain-insert
 * mode (`unsafe_dedupe`), which skips the default mode's update of running jobs with the same key
 * (1.5-2.5 ms a call with a backlog of a few thousand jobs in the webhooks benchmark).
 */
export async function createQueuedRun(
  deps: Pick<AppDeps, 'sql' | 'localRuns' | 'config'>,
  target: RunTarget,
  input: Record<string, unknown>,
  options: CreateRunOptions & {
    limit: number | null;
    guard?: QueuedRunGuard;
    /** The guard is this idempotency key's claim (for the run `runId`): runs so guarded are written together with others. */
    claim?: QueuedRunValues['claim'];
  },
): Promise<QueuedRunOutcome> {
  const local = deps.localRuns?.hasRoom() ? deps.localRuns : null;
  const { stored, row: run } = newRunValues(target, input, options);
  // The trigger step is stored with the run: one durable statement instead of two writes.
  const trigger = completeTriggerAtIntake(target, stored, limitsForPlan(target.scope.plan, deps.config.PLAN_LIMITS));
  if (trigger) run.nextStepId = stored.nextStepId;
  // Without a guard of the caller's, the run is always written.
  const guard = options.guard ?? null;
  let outcome: QueuedRunOutcome = { status: 'limited' };
  let admitted: boolean;
  const values: QueuedRunValues = { run, ownerId: local ? PROCESS_ID : null, queueJob: !local, trigger, claim: options.claim ?? null };
  const outcomeOf = (created: boolean): QueuedRunOutcome => (created ? { status: 'created', runId: stored.id, conversationId: stored.conversationId } : { status: 'duplicate' });
  try {
    if (options.limit === null && (options.guard === undefined || options.claim)) {
      // No slot to count: written together with the other runs accepted at the same moment.
      outcome = outcomeOf(await writeQueuedRun(deps.sql, values, guard));
      admitted = true;
    } else {
      admitted = await withinRunLimit(deps.sql, target.workflow.id, options.limit, async (query) => {
        const row = await insertQueuedRun(query, { guard, run, ownerId: values.ownerId, queueJob: values.queueJob, trigger });
        outcome = outcomeOf(row.created > 0);
      });
    }
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
