// Waits ending: what ends a run's wait (a delay's end or a timeout, an approval's decision, a
// callback, an answer to a run that asked for input, a cancel) stores how the waiting step goes on
// in `resume` together with the run's switch back to running, in one statement; and the reads a
// callback is checked with.
//
// Part of the workflow_runs table's writes (see run-intake.ts: the run-*.ts modules share them by
// statement family). Besides the run, these statements decide or cancel its workflow_approvals row
// (an approval only changes together with its run's wait) and remove the wake-up job or add the job
// that continues the run or delivers its callback (graphile_worker.remove_job / add_job, embedded as
// fragments). Built with db/statements.ts.
import { sql, type Expression } from 'kysely';
import type { WorkflowRunStatus } from '../../../db/column-values.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement } from '../../../db/statements.js';
import { workflowCallbackJob, workflowContinueJob, workflowWakeJob } from '../../jobs/contracts.js';
import { addJobSql, removeJobSql } from '../../jobs/store/job-queue.js';
import { cast, jsonbObject, lit, type ResumableRunRow, STORED_RUN_SELECTION } from './run-rows.js';

/** How the waiting step goes on: `resume` for the step the run stands at (`stepId`, its next_step_id). */
const resumeOf = (stepId: Expression<string | null>, kind: 'delay' | 'approval' | 'callback' | 'input', data: Expression<unknown>) =>
  jsonbObject(['step_id', stepId], ['kind', lit(kind)], ['data', data]);

/** The job that continues a woken run (`r`: its id and tenant_id). */
const CONTINUE_JOB = sql.raw<unknown>(addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' })).as('job');
/** The removal of the run's pending wake-up job (its timeout). */
const REMOVE_WAKE_JOB = sql.raw<unknown>(removeJobSql(workflowWakeJob, 'id::text')).as('removed');
/** The delivery of a final run to its callback URL. */
const CALLBACK_JOB = sql.raw<unknown>(addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' })).as('job');

type Wake = { runId: string; tenantId: string; wake: 'delay' | 'approval' | 'callback'; seq: number; approvalId: string | null };

// Each wake ends its wait only if the run still waits for exactly that (a decision, a callback or a
// cancel may have come first), storing how the step goes on with the switch back to running.
function wakeOf(values: Wake) {
  const woken = () => build.updateTable('workflow_runs').where('id', '=', values.runId).where('tenant_id', '=', values.tenantId);
  if (values.wake === 'delay') {
    return woken()
      .set((eb) => ({
        status: lit('running'), wait_kind: lit(null), owner_id: lit(null), updated_at: sql<Date>`now()`,
        resume: resumeOf(eb.ref('next_step_id'), 'delay', jsonbObject(['resume_at', eb.ref('resume_at')])), resume_at: lit(null),
      }))
      .where('status', '=', lit('waiting'))
      .where('wait_kind', '=', lit('delay'))
      .where(cast<number>(values.seq, 'int'), 'is not', null);
  }
  if (values.wake === 'callback') {
    return woken()
      .set((eb) => ({
        status: lit('running'), wait_kind: lit(null), owner_id: lit(null), updated_at: sql<Date>`now()`, callback_seq: eb('callback_seq', '+', lit(1)),
        resume: resumeOf(eb.ref('next_step_id'), 'callback', jsonbObject(['timed_out', lit(true)])),
      }))
      .where('status', '=', lit('waiting'))
      .where('wait_kind', '=', lit('callback'))
      .where('callback_seq', '=', cast<number>(values.seq, 'int'));
  }
  // An approval's timeout decides it (timed_out) in the same statement.
  return build
    .with('a', (db) =>
      db
        .updateTable('workflow_approvals')
        .set({ status: lit('timed_out'), decided_at: sql<Date>`now()` })
        .where('id', '=', cast<string>(values.approvalId, 'uuid'))
        .where('run_id', '=', values.runId)
        .where('status', '=', lit('pending'))
        .returning('id'),
    )
    .updateTable('workflow_runs')
    .set((eb) => ({
      status: lit('running'), wait_kind: lit(null), approval_id: lit(null), owner_id: lit(null), updated_at: sql<Date>`now()`,
      resume: resumeOf(eb.ref('next_step_id'), 'approval', jsonbObject(['timed_out', lit(true)], ['approval_id', cast(values.approvalId, 'text')])),
    }))
    .where('id', '=', values.runId)
    .where('tenant_id', '=', values.tenantId)
    .where('status', '=', lit('awaiting_approval'))
    .where('approval_id', '=', cast<string>(values.approvalId, 'uuid'))
    .where((eb) => eb.exists(eb.selectFrom('a').select(lit(1).as('one'))))
    .where(cast<number>(values.seq, 'int'), 'is not', null);
}

/** Ends the wait a wake-up job was planned for (a delay's end, an approval's or callback's timeout), if it still stands. */
export async function wakeRun(sql: SqlPool, values: Wake): Promise<void> {
  await runBuilt(sql, wakeOf(values));
}

type Decision = { approvalId: string; tenantId: string; status: 'approved' | 'rejected'; comment: string | null; decidedBy: string; decision: 'approve' | 'reject' };

const decisionOf = (values: Decision) =>
  build
    .with('a', (db) =>
      db
        .updateTable('workflow_approvals')
        .set({ status: values.status, comment: values.comment, decided_by: values.decidedBy, decided_at: sql<Date>`now()` })
        .where('id', '=', values.approvalId)
        .where('tenant_id', '=', values.tenantId)
        .where('status', '=', lit('pending'))
        .returningAll(),
    )
    .with('r', (db) =>
      db
        .updateTable('workflow_runs as r')
        .from('a')
        .set((eb) => ({
          status: lit('running'), wait_kind: lit(null), approval_id: lit(null), owner_id: lit(null), updated_at: sql<Date>`now()`,
          resume: resumeOf(
            eb.ref('r.next_step_id'),
            'approval',
            jsonbObject(
              ['approval_id', cast(values.approvalId, 'text')], ['decision', cast(values.decision, 'text')], ['comment', cast(values.comment, 'text')],
              ['decided_by', cast(values.decidedBy, 'text')], ['decided_at', sql<Date>`now()`],
            ),
          ),
        }))
        .whereRef('r.id', '=', 'a.run_id')
        .where('r.status', '=', lit('awaiting_approval'))
        .whereRef('r.approval_id', '=', 'a.id')
        .returning(['r.id', 'r.tenant_id']),
    )
    .with('timeout', (db) => db.selectFrom('r').select(REMOVE_WAKE_JOB))
    .with('job', (db) => db.selectFrom('r').select(CONTINUE_JOB))
    .selectNoFrom((eb) => [
      eb.cast<number>(eb.selectFrom('a').select(eb.fn.countAll().as('n')), 'integer').as('decided'),
      eb.cast<number>(eb.selectFrom('job').select(eb.fn.countAll().as('n')), 'integer').as('continued'),
      // Selected so the removal runs (a CTE nobody reads is never evaluated).
      eb.cast<number>(eb.selectFrom('timeout').select(eb.fn.countAll().as('n')), 'integer').as('removed'),
    ]);

/**
 * Decides a pending approval: the approval and the run's switch back to running (with the decision
 * stored as how the step goes on) change in one statement, and a job continues the run.
 */
export async function saveApprovalDecision(sql: SqlPool, values: Decision): Promise<{ decided: number; continued: number }> {
  const [row] = await runBuilt(sql, decisionOf(values));
  return row as { decided: number; continued: number };
}

const callbackWakeOf = (runId: string, seq: number, received: string) =>
  build
    .with('r', (db) =>
      db
        .updateTable('workflow_runs')
        .set((eb) => ({
          status: lit('running'), wait_kind: lit(null), owner_id: lit(null), callback_seq: eb('callback_seq', '+', lit(1)), updated_at: sql<Date>`now()`,
          resume: resumeOf(eb.ref('next_step_id'), 'callback', jsonbObject(['body', sql`${received}::jsonb -> 'body'`], ['received_at', sql`${received}::jsonb -> 'received_at'`])),
        }))
        .where('id', '=', runId)
        .where('status', '=', lit('waiting'))
        .where('wait_kind', '=', lit('callback'))
        .where('callback_seq', '=', seq)
        .returning(['id', 'tenant_id']),
    )
    .with('timeout', (db) => db.selectFrom('r').select(REMOVE_WAKE_JOB))
    .with('job', (db) => db.selectFrom('r').select(CONTINUE_JOB))
    .selectFrom('r')
    .select('id')
    // Always true: read so the job and the removal run (a CTE nobody reads is never evaluated).
    .where((eb) => eb(eb.selectFrom('job').select(eb.fn.countAll().as('n')), '>=', lit(0)))
    .where((eb) => eb(eb.selectFrom('timeout').select(eb.fn.countAll().as('n')), '>=', lit(0)));

/** A callback for the wait the run stands at: the run goes on (a job continues it). Null when it does not wait there. */
export async function wakeRunWithCallback(sql: SqlPool, runId: string, seq: number, received: string): Promise<{ id: string } | null> {
  const [woken] = await runBuilt(sql, callbackWakeOf(runId, seq, received));
  return woken ?? null;
}

const earlyCallbackKeeping = (runId: string, seq: number, received: string) =>
  build
    .updateTable('workflow_runs')
    .set({ early_callback: sql<Record<string, unknown>>`${received}::jsonb`, updated_at: sql<Date>`now()` })
    .where('id', '=', runId)
    .where('status', 'in', [lit('running'), lit('waiting'), lit('awaiting_approval'), lit('needs_input')])
    .where((eb) => eb(eb.fn.coalesce('wait_kind', lit('')), '<>', lit('callback')))
    .where('callback_seq', '=', seq)
    .where('early_callback', 'is', null)
    .returning('id');

/** A callback for a wait the run has not reached yet, kept until it does. Null when it cannot be kept. */
export async function keepEarlyCallback(sql: SqlPool, runId: string, seq: number, received: string): Promise<{ id: string } | null> {
  const [early] = await runBuilt(sql, earlyCallbackKeeping(runId, seq, received));
  return early ?? null;
}

const callbackStateOf = (runId: string) =>
  build
    .selectFrom('workflow_runs')
    .select((eb) => ['status', 'callback_seq', eb.cast<number | null>(eb.ref('early_callback', '->>').key('seq'), 'integer').as('early_seq'), 'wait_kind'])
    .where('id', '=', runId);

/** Where a run stands with its callbacks. */
export async function findRunCallbackState(sql: SqlPool, runId: string): Promise<{ status: string; callback_seq: number; early_seq: number | null; wait_kind: string | null } | null> {
  const [now] = await runBuilt(sql, callbackStateOf(runId));
  return now ?? null;
}

const CALLBACK_KEY = statement<{ runId: string }>()('liya_callback_key', (p) => build.selectFrom('workflow_runs').select('callback_key').where('id', '=', p.runId));

/** The key a run's callback tokens are signed with. */
export async function findRunCallbackKey(sql: SqlPool, runId: string): Promise<{ callback_key: string | null } | null> {
  const [run] = await CALLBACK_KEY.run(sql, { runId });
  return run ?? null;
}

const answerOf = (values: { tenantId: string; runId: string; ownerId: string; message: string }) =>
  build
    .updateTable('workflow_runs as r')
    .set((eb) => ({
      status: lit('running'), wait_kind: lit(null), owner_id: values.ownerId, updated_at: sql<Date>`now()`,
      resume: resumeOf(eb.ref('r.next_step_id'), 'input', jsonbObject(['message', cast(values.message, 'text')])),
    }))
    .where('id', '=', values.runId)
    .where('tenant_id', '=', values.tenantId)
    .where('status', '=', lit('needs_input'))
    .returning([...STORED_RUN_SELECTION, 'r.version', 'r.definition']);

/** The answer to a run waiting for input, stored with its switch back to running (owned by `ownerId`); null when another answer came first. */
export async function resumeRunWithAnswer(sql: SqlPool, values: { tenantId: string; runId: string; ownerId: string; message: string }): Promise<ResumableRunRow | null> {
  const [claimed] = await runBuilt(sql, answerOf(values));
  return (claimed as ResumableRunRow | undefined) ?? null;
}

const cancelOf = (tenantId: string, workflowId: string, runId: string) =>
  build
    .with('r', (db) =>
      db
        .updateTable('workflow_runs')
        .set({
          status: lit('cancelled'), wait_kind: lit(null), approval_id: lit(null), resume_at: lit(null), resume: lit(null), owner_id: lit(null),
          completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()`,
        })
        .where('id', '=', runId)
        .where('tenant_id', '=', tenantId)
        .where('workflow_id', '=', workflowId)
        .where('status', 'in', [lit('waiting'), lit('awaiting_approval'), lit('needs_input')])
        .returning(['id', 'tenant_id', 'callback_url']),
    )
    .with('a', (db) =>
      db
        .updateTable('workflow_approvals')
        .set({ status: lit('cancelled'), decided_at: sql<Date>`now()` })
        .where('run_id', 'in', (eb) => eb.selectFrom('r').select('id'))
        .where('status', '=', lit('pending'))
        .returning(lit(1).as('one')),
    )
    .with('j', (db) => db.selectFrom('r').select(REMOVE_WAKE_JOB))
    .with('n', (db) => db.selectFrom('r').select(CALLBACK_JOB).where('callback_url', 'is not', null))
    .selectNoFrom((eb) => {
      const count = (table: 'r' | 'a' | 'j' | 'n') => eb.selectFrom(table).select(eb.fn.countAll().as('n'));
      return [
        eb.cast<number>(count('r'), 'integer').as('cancelled'),
        // Selected so the removal and the callback's job run (a CTE nobody reads is never evaluated).
        eb(eb(count('a'), '+', count('j')), '+', count('n')).as('written'),
        eb
          .selectFrom('workflow_runs')
          .select('status')
          .where('id', '=', runId)
          .where('tenant_id', '=', tenantId)
          .where('workflow_id', '=', workflowId)
          .as('status'),
      ];
    });

/** Cancels a waiting run: pending wake-up jobs go, a pending approval is cancelled, a callback is queued. `status` is the run's status after (null: no such run). */
export async function cancelWaitingRun(sql: SqlPool, tenantId: string, workflowId: string, runId: string): Promise<{ cancelled: number; status: WorkflowRunStatus | null } | null> {
  const [row] = await runBuilt(sql, cancelOf(tenantId, workflowId, runId));
  return (row as { cancelled: number; status: WorkflowRunStatus | null } | undefined) ?? null;
}
