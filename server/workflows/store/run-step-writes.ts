// Step writes: a step's run_steps row together with its run's new position (or its end, or its
// wait), one statement and one round trip per step; the steps of several runs in one statement; a
// run that ends without a step; and the early callback a wait_for_callback step takes.
//
// Part of the workflow_runs table's writes (see run-intake.ts: the run-*.ts modules share them by
// statement family). Besides the run, these statements write the step's run_steps row, a wait's
// workflow_approvals row, and the job a final run's callback or a wait's end needs
// (graphile_worker.add_job, embedded as a fragment). The hot ones are named prepared statements,
// built with db/statements.ts and compiled once.
import { sql } from 'kysely';
import type { WorkflowRunStatus } from '../../../db/column-values.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement, type Params } from '../../../db/statements.js';
import { workflowCallbackJob, workflowWakeJob } from '../../jobs/contracts.js';
import { addJobSql } from '../../jobs/store/job-queue.js';
import type { WaitKind } from '../engine/run-types.js';
import { asyncCommit, cast, lit, RUN_STEP_COLUMNS, unnestAs } from './run-rows.js';

/** A step's run_steps row (values already bounded and serialised by the engine). */
export interface StepRowValues {
  tenantId: string;
  runId: string;
  index: number;
  type: string;
  name: string;
  stepId: string;
  status: string;
  /** JSON. */
  input: string;
  /** JSON. */
  output: string;
  latencyMs: number;
  error: string | null;
  startedAt: Date;
  completedAt: Date;
}

/** What `writeRunStep` stores of the run with its step. */
export interface StepRunValues {
  nextStepId: string | null;
  status: WorkflowRunStatus;
  /** The run's output as JSON (null keeps the stored one). */
  output: string | null;
  /** The run's error as JSON. */
  error: string | null;
  /** Queue the delivery of the final run to its callback URL. */
  queueCallback: boolean;
  /** With queueCallback: the W3C trace context (JSON) the delivery continues, or null. */
  traceContext: string | null;
  ownerId: string;
  executions: number;
}

/** The statuses that end a run. */
const FINAL = [lit('completed'), lit('failed'), lit('cancelled'), lit('rejected')];

/** The step's row, selected from the CTE `run` (which holds one row when the run was written). */
const stepRowFromRun = (p: Params<StepRowValues>) =>
  [
    sql<string>`gen_random_uuid()`.as('id'), sql.val(p.tenantId).as('tenant_id'), lit('workflow').as('run_kind'), sql.val(p.runId).as('run_id'),
    sql.val(p.index).as('index'), sql.val(p.type).as('type'), sql.val(p.name).as('name'), sql.val(p.stepId).as('step_id'), sql.val(p.status).as('status'),
    cast(p.input, 'jsonb').as('input'), cast(p.output, 'jsonb').as('output'), lit(0).as('prompt_tokens'), lit(0).as('completion_tokens'),
    lit(0).as('cost_usd'), sql.val(p.latencyMs).as('latency_ms'), sql.val(p.error).as('error'), sql.val(p.startedAt).as('started_at'),
    sql.val(p.completedAt).as('completed_at'),
  ] as const;

type StepParams = StepRowValues & {
  nextStepId: string | null;
  runStatus: WorkflowRunStatus;
  runOutput: string | null;
  runError: string | null;
  queueCallback: boolean;
  traceContext: string | null;
  ownerId: string;
  executions: number;
};

// One statement per step: its result row and the run's new position (or its end). Asynchronous
// commit, as the other run rows: ordering is kept, a crash of this process loses nothing (the
// database has it); a crash of the database loses at most the last moment. Fenced: only the
// process that owns the running run writes (one that was paused while another took the run over
// writes nothing and stops). A final status with a callback URL queues its delivery.
const STEP = statement<StepParams>()('liya_workflow_step', (p) =>
  build
    .with('async_commit', asyncCommit)
    .with('run', (db) =>
      db
        .updateTable('workflow_runs')
        .set((eb) => ({
          next_step_id: p.nextStepId,
          steps_done: eb(eb.val(p.index), '+', lit(1)),
          executions: p.executions,
          status: p.runStatus,
          output: eb.fn.coalesce(cast(p.runOutput, 'jsonb'), eb.ref('output')),
          error: cast(p.runError, 'jsonb'),
          resume: lit(null),
          wait_kind: lit(null),
          approval_id: lit(null),
          resume_at: lit(null),
          owner_id: eb.case().when(eb.val(p.runStatus), '=', lit('running')).then(eb.ref('owner_id')).else(lit(null)).end(),
          updated_at: sql<Date>`now()`,
          completed_at: eb.case().when(eb.val(p.runStatus), 'in', FINAL).then(sql<Date>`now()`).else(lit(null)).end(),
        }))
        .where('id', '=', p.runId)
        .where('tenant_id', '=', p.tenantId)
        .where('status', '=', lit('running'))
        .where('owner_id', '=', p.ownerId)
        // What the callback's job carries (a CTE reads only what another returns).
        .returning(['id', 'tenant_id', cast(p.traceContext, 'json').as('trace_context')]),
    )
    .with('step', (db) =>
      db
        .insertInto('run_steps')
        .columns(RUN_STEP_COLUMNS)
        .expression(db.selectFrom('run').select(stepRowFromRun(p)))
        .onConflict((oc) => oc.columns(['run_id', 'index']).doNothing())
        .returning(lit(1).as('one')),
    )
    .with('notify', (db) =>
      db
        .selectFrom('run')
        .select(sql.raw<unknown>(addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: 'tenant_id::text', trace_context: 'trace_context' })).as('job'))
        .where(cast<boolean>(p.queueCallback, 'boolean')),
    )
    .selectNoFrom((eb) => [
      eb.cast<number>(eb.selectFrom('run').select(eb.fn.countAll().as('n')), 'integer').as('owned'),
      eb(eb(eb.selectFrom('step').select(eb.fn.countAll().as('n')), '+', eb.selectFrom('async_commit').select(eb.fn.countAll().as('n'))), '+', eb.selectFrom('notify').select(eb.fn.countAll().as('n'))).as('written'),
    ]),
);

/** Writes a step and the run's new position; whether `ownerId` still owned the running run (otherwise nothing was written). */
export async function writeRunStep(sql: SqlPool, step: StepRowValues, run: StepRunValues): Promise<boolean> {
  const [row] = await STEP.run(sql, {
    ...step, nextStepId: run.nextStepId, runStatus: run.status, runOutput: run.output, runError: run.error, queueCallback: run.queueCallback,
    traceContext: run.traceContext, ownerId: run.ownerId, executions: run.executions,
  });
  return row.owned > 0;
}

/** One step of the several-steps statement: a row of its arrays. */
interface StepsRow {
  tenant_id: string; run_id: string; idx: number; type: string; name: string; step_id: string; status: string; input: string; output: string;
  latency_ms: number; error: string | null; started_at: Date; completed_at: Date; next_step_id: string | null; run_status: WorkflowRunStatus;
  run_output: string | null; run_error: string | null; queue_callback: boolean; owner_id: string; executions: number; trace_context: string | null;
}

const STEPS_TYPES: Record<keyof StepsRow, string> = {
  tenant_id: 'uuid', run_id: 'uuid', idx: 'int', type: 'text', name: 'text', step_id: 'text', status: 'text', input: 'text', output: 'text',
  latency_ms: 'int', error: 'text', started_at: 'timestamptz', completed_at: 'timestamptz', next_step_id: 'text', run_status: 'text', run_output: 'text',
  run_error: 'text', queue_callback: 'boolean', owner_id: 'text', executions: 'int', trace_context: 'text',
};

// Steps of several runs in one statement: the same writes as STEP, one row of the arrays per step
// (each run's own fence). The runs are found by `id = any(...)` (the primary key). The status is
// compared with a subquery's value, not a constant, so the partial index of running runs cannot
// serve the statement: its statistics, taken when few runs were running, make a scan of the whole
// index look free, and under a backlog that scan reads every running run of the process.
const STEPS = statement<{ [K in keyof StepsRow]: StepsRow[K][] }>()('liya_workflow_steps', (p) =>
  build
    .with('async_commit', asyncCommit)
    .with('w', (db) =>
      db.selectFrom(unnestAs<StepsRow, 'w'>('w', (Object.keys(STEPS_TYPES) as (keyof StepsRow)[]).map((name) => [name, STEPS_TYPES[name], p[name]]))).selectAll(),
    )
    .with('run', (db) =>
      db
        .updateTable('workflow_runs as r')
        .from('w')
        .set((eb) => ({
          next_step_id: eb.ref('w.next_step_id'),
          steps_done: eb('w.idx', '+', lit(1)),
          executions: eb.ref('w.executions'),
          status: eb.ref('w.run_status'),
          output: eb.fn.coalesce(cast(sql.ref('w.run_output'), 'jsonb'), eb.ref('r.output')),
          error: cast(sql.ref('w.run_error'), 'jsonb'),
          resume: lit(null),
          wait_kind: lit(null),
          approval_id: lit(null),
          resume_at: lit(null),
          owner_id: eb.case().when('w.run_status', '=', lit('running')).then(eb.ref('r.owner_id')).else(lit(null)).end(),
          updated_at: sql<Date>`now()`,
          completed_at: eb.case().when('w.run_status', 'in', FINAL).then(sql<Date>`now()`).else(lit(null)).end(),
        }))
        .where(sql<boolean>`${sql.ref('r.id')} = any(${p.run_id}::uuid[])`)
        .whereRef('r.id', '=', 'w.run_id')
        .whereRef('r.tenant_id', '=', 'w.tenant_id')
        .whereRef('r.owner_id', '=', 'w.owner_id')
        .where('r.status', '=', build.selectNoFrom(cast<WorkflowRunStatus>(lit('running'), 'text').as('status')))
        .returning(['r.id', 'r.tenant_id', 'w.queue_callback', 'w.trace_context']),
    )
    .with('step', (db) =>
      db
        .insertInto('run_steps')
        .columns(RUN_STEP_COLUMNS)
        .expression(
          db
            .selectFrom('w')
            .innerJoin('run', 'run.id', 'w.run_id')
            .select([
              sql<string>`gen_random_uuid()`.as('id'), 'w.tenant_id', lit('workflow').as('run_kind'), 'w.run_id', 'w.idx as index', 'w.type', 'w.name', 'w.step_id',
              'w.status', cast(sql.ref('w.input'), 'jsonb').as('input'), cast(sql.ref('w.output'), 'jsonb').as('output'), lit(0).as('prompt_tokens'),
              lit(0).as('completion_tokens'), lit(0).as('cost_usd'), 'w.latency_ms', 'w.error', 'w.started_at', 'w.completed_at',
            ]),
        )
        .onConflict((oc) => oc.columns(['run_id', 'index']).doNothing())
        .returning(lit(1).as('one')),
    )
    .with('notify', (db) =>
      db
        .selectFrom('run')
        .select(sql.raw<unknown>(addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: 'tenant_id::text', trace_context: 'trace_context::json' })).as('job'))
        .where((eb) => eb.ref('queue_callback')),
    )
    .selectNoFrom((eb) => [
      sql<string[]>`array(${eb.selectFrom('run').select(cast<string>(sql.ref('id'), 'text').as('id'))})`.as('owned'),
      eb(eb(eb.selectFrom('step').select(eb.fn.countAll().as('n')), '+', eb.selectFrom('async_commit').select(eb.fn.countAll().as('n'))), '+', eb.selectFrom('notify').select(eb.fn.countAll().as('n'))).as('written'),
    ]),
);

/**
 * Writes the steps of several runs (at most one each) and their runs' new positions in one
 * statement, as `writeRunStep` writes one; the ids of the runs `ownerId` still owned (the others
 * got nothing written).
 */
export async function writeRunSteps(sql: SqlPool, writes: { step: StepRowValues; run: StepRunValues }[]): Promise<Set<string>> {
  const column = <T>(pick: (w: { step: StepRowValues; run: StepRunValues }) => T): T[] => writes.map(pick);
  const [row] = await STEPS.run(sql, {
    tenant_id: column((w) => w.step.tenantId), run_id: column((w) => w.step.runId), idx: column((w) => w.step.index), type: column((w) => w.step.type),
    name: column((w) => w.step.name), step_id: column((w) => w.step.stepId), status: column((w) => w.step.status), input: column((w) => w.step.input),
    output: column((w) => w.step.output), latency_ms: column((w) => w.step.latencyMs), error: column((w) => w.step.error), started_at: column((w) => w.step.startedAt),
    completed_at: column((w) => w.step.completedAt), next_step_id: column((w) => w.run.nextStepId), run_status: column((w) => w.run.status),
    run_output: column((w) => w.run.output), run_error: column((w) => w.run.error), queue_callback: column((w) => w.run.queueCallback),
    owner_id: column((w) => w.run.ownerId), executions: column((w) => w.run.executions), trace_context: column((w) => w.run.traceContext),
  });
  return new Set(row.owned);
}

/** What `writeRunWait` stores of the run's wait. */
export interface RunWaitValues {
  nextStepId: string;
  status: WorkflowRunStatus;
  kind: WaitKind;
  approvalId: string | null;
  /** A delay's end. */
  resumeAt: Date | null;
  approvalStepId: string;
  loopIndex: number | null;
  message: string | null;
  approvalExpiresAt: Date | null;
  callbackSeq: number;
  /** When the job that wakes the run runs (none when null). */
  wakeAt: Date | null;
  ownerId: string;
  executions: number;
}

// A wait: the waiting step's row, the run's wait, an approval to decide and the job that wakes the
// run (a delay's end or a timeout), in one durable statement. A callback wait is refused (nothing
// written) when a callback for it arrived meanwhile: the step then runs again and takes it.
const WAIT = statement<StepRowValues & RunWaitValues>()('liya_workflow_wait', (p) =>
  build
    .with('run', (db) =>
      db
        .updateTable('workflow_runs')
        .set((eb) => ({
          next_step_id: p.nextStepId,
          steps_done: eb(eb.val(p.index), '+', lit(1)),
          executions: p.executions,
          status: p.status,
          wait_kind: p.kind,
          approval_id: cast(p.approvalId, 'uuid'),
          resume_at: p.resumeAt,
          resume: lit(null),
          owner_id: lit(null),
          updated_at: sql<Date>`now()`,
        }))
        .where('id', '=', p.runId)
        .where('tenant_id', '=', p.tenantId)
        .where('status', '=', lit('running'))
        .where('owner_id', '=', p.ownerId)
        .where((eb) => eb.or([eb(eb.val(p.kind), '<>', lit('callback')), eb('early_callback', 'is', null)]))
        // What the approval and the wake-up job carry (a CTE reads only what another returns).
        .returning([
          'workflow_id', 'id', 'tenant_id', cast(p.kind, 'text').as('wake'), cast(p.callbackSeq, 'int').as('seq'), cast(p.approvalId, 'text').as('approval_text'),
          cast(p.wakeAt, 'timestamptz').as('wake_at'),
        ]),
    )
    .with('step', (db) =>
      db
        .insertInto('run_steps')
        .columns(RUN_STEP_COLUMNS)
        .expression(db.selectFrom('run').select(stepRowFromRun(p)))
        .onConflict((oc) => oc.columns(['run_id', 'index']).doNothing())
        .returning(lit(1).as('one')),
    )
    .with('approval', (db) =>
      db
        .insertInto('workflow_approvals')
        .columns(['id', 'tenant_id', 'workflow_id', 'run_id', 'step_id', 'loop_index', 'message', 'status', 'expires_at', 'created_at'])
        .expression(
          db
            .selectFrom('run')
            .select([
              cast(p.approvalId, 'uuid').as('id'), sql.val(p.tenantId).as('tenant_id'), 'workflow_id', sql.val(p.runId).as('run_id'), sql.val(p.approvalStepId).as('step_id'),
              sql.val(p.loopIndex).as('loop_index'), sql.val(p.message).as('message'), lit('pending').as('status'), sql.val(p.approvalExpiresAt).as('expires_at'),
              sql<Date>`now()`.as('created_at'),
            ])
            .where(cast(p.approvalId, 'uuid'), 'is not', null),
        )
        .returning(lit(1).as('one')),
    )
    .with('wake', (db) =>
      db
        .selectFrom('run')
        .select(
          sql
            .raw<unknown>(addJobSql(workflowWakeJob, { run_id: 'id::text', tenant_id: 'tenant_id::text', wake: 'wake', seq: 'seq', approval_id: 'approval_text' }, { runAt: 'wake_at' }))
            .as('job'),
        )
        .where('wake_at', 'is not', null),
    )
    .selectNoFrom((eb) => [
      eb.cast<number>(eb.selectFrom('run').select(eb.fn.countAll().as('n')), 'integer').as('waited'),
      eb
        .cast<number>(
          eb
            .selectFrom('workflow_runs')
            .select(eb.fn.countAll().as('n'))
            .where('id', '=', p.runId)
            .where('status', '=', lit('running'))
            .where('owner_id', '=', p.ownerId),
          'integer',
        )
        .as('owned'),
      eb(eb(eb.selectFrom('step').select(eb.fn.countAll().as('n')), '+', eb.selectFrom('approval').select(eb.fn.countAll().as('n'))), '+', eb.selectFrom('wake').select(eb.fn.countAll().as('n'))).as('written'),
    ]),
);

/** Writes a waiting step with the run's wait (and its approval and wake-up job). Not `waited` when a callback arrived first; not `owned` when `ownerId` lost the run. */
export async function writeRunWait(sql: SqlPool, step: StepRowValues, wait: RunWaitValues): Promise<{ waited: boolean; owned: boolean }> {
  const [row] = await WAIT.run(sql, { ...step, ...wait });
  return { waited: row.waited > 0, owned: row.owned > 0 };
}

/** A run with no step to run ends completed as it stands. */
export async function completeEmptyRun(sql: SqlPool, tenantId: string, runId: string): Promise<void> {
  await runBuilt(sql, emptyRunCompletion(tenantId, runId));
}

const emptyRunCompletion = (tenantId: string, runId: string) =>
  build
    .updateTable('workflow_runs')
    .set({ status: lit('completed'), owner_id: lit(null), completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', runId)
    .where('tenant_id', '=', tenantId)
    .where('status', '=', lit('running'));

/** Fails a run with `error` (stored as given). */
export async function failRun(sql: SqlPool, tenantId: string, runId: string, error: Record<string, unknown>): Promise<void> {
  await runBuilt(sql, runFailure(tenantId, runId, error));
}

const runFailure = (tenantId: string, runId: string, error: Record<string, unknown>) =>
  build
    .updateTable('workflow_runs')
    .set({ status: lit('failed'), owner_id: lit(null), completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()`, error: cast(JSON.stringify(error), 'jsonb') })
    .where('id', '=', runId)
    .where('tenant_id', '=', tenantId);

/** A callback that came before the run reached its wait_for_callback step, moved into `resume` for `stepId`; null when none waits. */
export async function takeEarlyCallback(sql: SqlPool, tenantId: string, runId: string, stepId: string): Promise<{ resume: { step_id: string; data: Record<string, unknown> } } | null> {
  const [early] = await runBuilt(sql, earlyCallbackTaking(tenantId, runId, stepId));
  return (early as { resume: { step_id: string; data: Record<string, unknown> } } | undefined) ?? null;
}

const earlyCallbackTaking = (tenantId: string, runId: string, stepId: string) =>
  build
    .updateTable('workflow_runs')
    .set((eb) => ({
      resume: eb.fn('jsonb_build_object', [
        lit('step_id'), cast(stepId, 'text'), lit('kind'), lit('callback'), lit('data'),
        eb.fn('jsonb_build_object', [lit('body'), eb.ref('early_callback', '->').key('body'), lit('received_at'), eb.ref('early_callback', '->').key('received_at')]),
      ]),
      early_callback: lit(null),
      callback_seq: eb('callback_seq', '+', lit(1)),
      updated_at: sql<Date>`now()`,
    }))
    .where('id', '=', runId)
    .where('tenant_id', '=', tenantId)
    .where('early_callback', 'is not', null)
    .where((eb) => eb(eb.cast(eb.ref('early_callback', '->>').key('seq'), 'integer'), '=', eb.ref('callback_seq')))
    .returning('resume');
