// Run intake: the statements that create workflow runs (a sync run owned by this process, a queued
// run with its guard, several queued runs at once), the count that admits a run under the
// workflow's max_concurrent_runs, and the claim that takes a running run for a process.
//
// The workflow_runs table is written only by the run-*.ts modules of this folder, each holding one
// family of its statements (intake, step writes, waits, recovery, erasure). A queued run's
// statement writes, in one round trip and one durable commit, besides the run: its guard row (an
// idempotency_keys claim, built by idempotency-keys.ts, or a workflow_schedule_ticks record, built
// by schedule-ticks.ts), its trigger step's run_steps row when the intake did it, and its job
// (graphile_worker.add_job, embedded as a fragment). All built with db/statements.ts and compiled
// once; the hot ones run as the named prepared statements they always were.
import { sql, type QueryCreator, type RawBuilder } from 'kysely';
import type { Database } from '../../../db/kysely.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, runBuilt, statement, type Params } from '../../../db/statements.js';
import { workflowContinueJob } from '../../jobs/contracts.js';
import { addJobSql } from '../../jobs/store/job-queue.js';
import { TENANT_SCOPE_SELECTION, type TenantScopeRow } from '../../tenants/tenant-scope.js';
import type { StepDef } from '../step-types.js';
import { claimKeyInsert, claimKeysFrom, type KeyClaim } from './idempotency-keys.js';
import { asyncCommit, cast, lit, RUN_STEP_COLUMNS, STORED_RUN_SELECTION, type StoredRunRow, unnestAs } from './run-rows.js';
import { recordTickInsert } from './schedule-ticks.js';
import type { StateScope } from './workflow-state.js';

type Query = SqlPool['query'];

/** A new run's values (the row is written `running`, positioned at `nextStepId`). */
export interface NewRunRow {
  id: string;
  tenantId: string;
  workflowId: string;
  version: number | null;
  /** A test run's steps as JSON (null for a deployed version). */
  definition: string | null;
  scope: StateScope;
  conversationId: string;
  triggeredBy: string;
  /** The input as JSON. */
  input: string;
  nextStepId: string | null;
  environmentId: string | null;
  callbackKey: string | null;
  callbackUrl: string | null;
  depth: number;
}

const RUN_COLUMNS = [
  'id', 'tenant_id', 'workflow_id', 'version', 'definition', 'scope', 'conversation_id', 'status', 'triggered_by', 'input', 'output', 'next_step_id',
  'steps_done', 'error', 'environment_id', 'callback_key', 'callback_url', 'depth', 'owner_id', 'started_at', 'updated_at', 'completed_at',
] as const;

type RunParams = NewRunRow & { ownerId: string | null };

/** The run's values in RUN_COLUMNS order; `stepsDone` is the steps_done expression (0 for a run that has run nothing). */
const runValues = (p: Params<RunParams>, stepsDone: RawBuilder<number> = lit(0)) => [
  sql.val(p.id).as('id'), sql.val(p.tenantId).as('tenant_id'), sql.val(p.workflowId).as('workflow_id'), sql.val(p.version).as('version'),
  cast(p.definition, 'jsonb').as('definition'), sql.val(p.scope).as('scope'), sql.val(p.conversationId).as('conversation_id'), lit('running').as('status'),
  sql.val(p.triggeredBy).as('triggered_by'), cast(p.input, 'jsonb').as('input'), lit(null).as('output'), sql.val(p.nextStepId).as('next_step_id'),
  stepsDone.as('steps_done'), lit(null).as('error'), sql.val(p.environmentId).as('environment_id'), sql.val(p.callbackKey).as('callback_key'),
  sql.val(p.callbackUrl).as('callback_url'), sql.val(p.depth).as('depth'), sql.val(p.ownerId).as('owner_id'), sql<Date>`now()`.as('started_at'),
  sql<Date>`now()`.as('updated_at'), lit(null).as('completed_at'),
];

const runParams = (run: NewRunRow, ownerId: string | null): RunParams => ({ ...run, ownerId });

// Asynchronous commit, like the step rows written after it (their order is kept).
const CREATE = statement<RunParams>()('liya_workflow_run_create', (p) =>
  build
    .with('async_commit', asyncCommit)
    .insertInto('workflow_runs')
    .columns(RUN_COLUMNS)
    .expression((eb) => eb.selectFrom('async_commit').select(runValues(p))),
);

/** Inserts a run owned by `ownerId` (a sync run, executed by this process at once). */
export async function insertRun(sql: SqlPool, run: NewRunRow, ownerId: string): Promise<void> {
  await CREATE.run(sql, runParams(run, ownerId));
}

/**
 * What must be written first for a queued run to be created (none: always created): an
 * idempotency key's claim, or a schedule tick's record. Each is a CTE of the run's statement.
 */
export type QueuedRunGuard = { claim: KeyClaim } | { tick: { workflowId: string; tickAt: Date } };

/** A queued run's trigger step, done at intake (its row is stored with the run, index 0). */
export interface IntakeStepValues {
  type: string;
  name: string;
  stepId: string;
  /** JSON. */
  input: string;
  /** JSON. */
  output: string;
  startedAt: Date;
  completedAt: Date;
}

type QueuedRunParams = RunParams & {
  queueJob: boolean;
  stepsDone: number;
  stepType: string | null;
  stepName: string | null;
  stepId: string | null;
  stepInput: string | null;
  stepOutput: string | null;
  stepStartedAt: Date | null;
  stepCompletedAt: Date | null;
};

/**
 * The queued run after its guard CTE: the run only when the guard wrote its row, its trigger step,
 * and its job. `queued` and `stepped` are selected so those CTEs run (a CTE nobody reads is never
 * evaluated). The job's run is new, so no job can hold its key yet: it is added in graphile-worker's
 * plain-insert mode (`unsafe_dedupe`).
 */
function queuedRunAfter(guarded: QueryCreator<Database & { guard: { one: number } }>, p: Params<QueuedRunParams>) {
  return guarded
    .with('run', (db) =>
      db
        .insertInto('workflow_runs')
        .columns([...RUN_COLUMNS, 'executions'])
        .expression(
          db
            .selectNoFrom([...runValues(p, cast(p.stepsDone, 'int')), cast(p.stepsDone, 'int').as('executions')])
            .where((eb) => eb.exists(eb.selectFrom('guard').select(lit(1).as('one')))),
        )
        .returning(['id', 'tenant_id']),
    )
    .with('step', (db) =>
      db
        .insertInto('run_steps')
        .columns(RUN_STEP_COLUMNS)
        .expression(
          db
            .selectFrom('run')
            .select([
              sql<string>`gen_random_uuid()`.as('id'), sql.val(p.tenantId).as('tenant_id'), lit('workflow').as('run_kind'), 'run.id as run_id', lit(0).as('index'),
              cast(p.stepType, 'text').as('type'), cast(p.stepName, 'text').as('name'), cast(p.stepId, 'text').as('step_id'), lit('completed').as('status'),
              cast(p.stepInput, 'jsonb').as('input'), cast(p.stepOutput, 'jsonb').as('output'), lit(0).as('prompt_tokens'), lit(0).as('completion_tokens'),
              lit(0).as('cost_usd'), lit(0).as('latency_ms'), lit(null).as('error'), cast(p.stepStartedAt, 'timestamptz').as('started_at'),
              cast(p.stepCompletedAt, 'timestamptz').as('completed_at'),
            ])
            .where(cast(p.stepType, 'text'), 'is not', null),
        )
        .returning(lit(1).as('one')),
    )
    .with('job', (db) =>
      db
        .selectFrom('run')
        .select(sql.raw<unknown>(addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' }, { keyMode: 'unsafe_dedupe' })).as('job'))
        .where(cast<boolean>(p.queueJob, 'boolean')),
    )
    .selectNoFrom((eb) => [
      eb.cast<number>(eb.selectFrom('guard').select(eb.fn.countAll().as('n')), 'integer').as('guarded'),
      eb.cast<number>(eb.selectFrom('run').select(eb.fn.countAll().as('n')), 'integer').as('created'),
      eb.cast<number>(eb.selectFrom('job').select(eb.fn.countAll().as('n')), 'integer').as('queued'),
      eb.cast<number>(eb.selectFrom('step').select(eb.fn.countAll().as('n')), 'integer').as('stepped'),
    ]);
}

type ClaimParams = { claimTenantId: string; claimScope: string; claimKey: string; claimRequestHash: string; claimRunId: string | null };
type TickParams = { tickWorkflowId: string; tickAt: Date };

// One statement per guard: the run alone (its guard always one row), with a key's claim, with a tick.
const QUEUED_RUN = statement<QueuedRunParams>()('liya_workflow_queued_run', (p) =>
  queuedRunAfter(build.with('guard', (db) => db.selectNoFrom(sql.lit(1).as('one'))), p),
);
const QUEUED_RUN_CLAIMED = statement<QueuedRunParams & ClaimParams>()('liya_workflow_queued_run_claimed', (p) =>
  queuedRunAfter(
    build.with('guard', () => claimKeyInsert({ tenantId: p.claimTenantId, scope: p.claimScope, key: p.claimKey, requestHash: p.claimRequestHash, runId: p.claimRunId })),
    p,
  ),
);
const QUEUED_RUN_TICKED = statement<QueuedRunParams & TickParams>()('liya_workflow_queued_run_ticked', (p) =>
  queuedRunAfter(build.with('guard', () => recordTickInsert({ workflowId: p.tickWorkflowId, tickAt: p.tickAt })), p),
);

/**
 * A queued run: the guard row and the run in one statement (all or nothing), its trigger step when
 * the intake did it (`trigger`: the row, and the run positioned after it), and unless `ownerId` is
 * set (this process executes it) the job that runs it. Committed durably (the caller answers that
 * the run is accepted).
 */
export async function insertQueuedRun(
  query: Query,
  values: { guard: QueuedRunGuard | null; run: NewRunRow; ownerId: string | null; queueJob: boolean; trigger: IntakeStepValues | null },
): Promise<{ guarded: number; created: number; queued: number }> {
  const t = values.trigger;
  const params: QueuedRunParams = {
    ...runParams(values.run, values.ownerId), queueJob: values.queueJob, stepsDone: t ? 1 : 0,
    stepType: t?.type ?? null, stepName: t?.name ?? null, stepId: t?.stepId ?? null, stepInput: t?.input ?? null, stepOutput: t?.output ?? null,
    stepStartedAt: t?.startedAt ?? null, stepCompletedAt: t?.completedAt ?? null,
  };
  const guard = values.guard;
  const [row] =
    guard === null
      ? await QUEUED_RUN.run(query, params)
      : 'claim' in guard
        ? await QUEUED_RUN_CLAIMED.run(query, {
            ...params, claimTenantId: guard.claim.tenantId, claimScope: guard.claim.scope, claimKey: guard.claim.key,
            claimRequestHash: guard.claim.requestHash, claimRunId: guard.claim.runId,
          })
        : await QUEUED_RUN_TICKED.run(query, { ...params, tickWorkflowId: guard.tick.workflowId, tickAt: guard.tick.tickAt });
  return row;
}

/** A queued run of `insertQueuedRuns`: its values and its idempotency key's claim (when it has one). */
export interface QueuedRunValues {
  run: NewRunRow;
  ownerId: string | null;
  queueJob: boolean;
  trigger: IntakeStepValues | null;
  claim: { scope: string; key: string; requestHash: string } | null;
}

/** One run of the several-runs statement: a row of its arrays. */
interface QueuedRunsRow {
  id: string; tenant_id: string; workflow_id: string; version: number | null; definition: string | null; scope: StateScope; conversation_id: string;
  triggered_by: string; input: string; next_step_id: string | null; environment_id: string | null; callback_key: string | null; callback_url: string | null;
  depth: number; owner_id: string | null; queue_job: boolean; steps_done: number; step_type: string | null; step_name: string | null; step_id: string | null;
  step_input: string | null; step_output: string | null; step_at: Date | null; claim_scope: string | null; claim_key: string | null; request_hash: string | null;
}

/** The arrays of the several-runs statement, one per column of QueuedRunsRow. */
type QueuedRunsParams = { [K in keyof QueuedRunsRow]: QueuedRunsRow[K][] };

const QUEUED_RUNS_TYPES: Record<keyof QueuedRunsRow, string> = {
  id: 'uuid', tenant_id: 'uuid', workflow_id: 'uuid', version: 'int', definition: 'text', scope: 'text', conversation_id: 'uuid', triggered_by: 'text',
  input: 'text', next_step_id: 'text', environment_id: 'uuid', callback_key: 'text', callback_url: 'text', depth: 'int', owner_id: 'text',
  queue_job: 'boolean', steps_done: 'int', step_type: 'text', step_name: 'text', step_id: 'text', step_input: 'text', step_output: 'text',
  step_at: 'timestamptz', claim_scope: 'text', claim_key: 'text', request_hash: 'text',
};

// Several queued runs in one statement (one round trip, one durable commit): each row of the arrays
// is what insertQueuedRun writes for one run, with the idempotency key claim as its guard (rows
// without a claim are not guarded). No two rows may claim the same key.
const QUEUED_RUNS = statement<QueuedRunsParams>()('liya_workflow_queued_runs', (p) =>
  build
    .with('w', (db) =>
      db
        .selectFrom(unnestAs<QueuedRunsRow, 'w'>('w', (Object.keys(QUEUED_RUNS_TYPES) as (keyof QueuedRunsRow)[]).map((name) => [name, QUEUED_RUNS_TYPES[name], p[name]])))
        .selectAll(),
    )
    .with('claim', (db) =>
      claimKeysFrom(
        db
          .selectFrom('w')
          .select(['tenant_id', 'claim_scope', 'claim_key', 'request_hash', 'id', lit(null).as('result'), sql<Date>`now()`.as('created_at')])
          .where('claim_key', 'is not', null),
      ),
    )
    .with('run', (db) =>
      db
        .insertInto('workflow_runs')
        .columns([...RUN_COLUMNS, 'executions'])
        .expression(
          db
            .selectFrom('w')
            .select([
              'id', 'tenant_id', 'workflow_id', 'version', cast(sql.ref('definition'), 'jsonb').as('definition'), 'scope', 'conversation_id', lit('running').as('status'),
              'triggered_by', cast(sql.ref('input'), 'jsonb').as('input'), lit(null).as('output'), 'next_step_id', 'steps_done', lit(null).as('error'),
              'environment_id', 'callback_key', 'callback_url', 'depth', 'owner_id', sql<Date>`now()`.as('started_at'), sql<Date>`now()`.as('updated_at'),
              lit(null).as('completed_at'), 'steps_done as executions',
            ])
            .where((eb) => eb.or([eb('claim_key', 'is', null), eb('id', 'in', eb.selectFrom('claim').select('run_id'))])),
        )
        .returning('id'),
    )
    .with('step', (db) =>
      db
        .insertInto('run_steps')
        .columns(RUN_STEP_COLUMNS)
        .expression(
          db
            .selectFrom('w')
            .innerJoin('run', 'run.id', 'w.id')
            .select([
              sql<string>`gen_random_uuid()`.as('id'), 'w.tenant_id', lit('workflow').as('run_kind'), 'w.id as run_id', lit(0).as('index'), 'w.step_type as type',
              'w.step_name as name', 'w.step_id', lit('completed').as('status'), cast(sql.ref('w.step_input'), 'jsonb').as('input'),
              cast(sql.ref('w.step_output'), 'jsonb').as('output'), lit(0).as('prompt_tokens'), lit(0).as('completion_tokens'), lit(0).as('cost_usd'),
              lit(0).as('latency_ms'), lit(null).as('error'), 'w.step_at as started_at', 'w.step_at as completed_at',
            ])
            .where('w.step_type', 'is not', null),
        )
        .returning(lit(1).as('one')),
    )
    .with('job', (db) =>
      db
        .selectFrom('w')
        .innerJoin('run', 'run.id', 'w.id')
        .select(sql.raw<unknown>(addJobSql(workflowContinueJob, { run_id: 'w.id::text', tenant_id: 'w.tenant_id::text' }, { keyMode: 'unsafe_dedupe' })).as('job'))
        .where((eb) => eb.ref('w.queue_job')),
    )
    .selectNoFrom((eb) => [
      sql<string[]>`array(${eb.selectFrom('run').select(cast<string>(sql.ref('id'), 'text').as('id'))})`.as('created'),
      eb(eb.cast(eb.selectFrom('step').select(eb.fn.countAll().as('n')), 'integer'), '+', eb.cast(eb.selectFrom('job').select(eb.fn.countAll().as('n')), 'integer')).as('written'),
    ]),
);

/** Writes several queued runs in one durable statement; the ids of the runs created (a run whose key was taken already is not). */
export async function insertQueuedRuns(sql: SqlPool, runs: QueuedRunValues[]): Promise<Set<string>> {
  const column = <T>(pick: (r: QueuedRunValues) => T): T[] => runs.map(pick);
  const [row] = await QUEUED_RUNS.run(sql, {
    id: column((r) => r.run.id), tenant_id: column((r) => r.run.tenantId), workflow_id: column((r) => r.run.workflowId), version: column((r) => r.run.version),
    definition: column((r) => r.run.definition), scope: column((r) => r.run.scope), conversation_id: column((r) => r.run.conversationId),
    triggered_by: column((r) => r.run.triggeredBy), input: column((r) => r.run.input), next_step_id: column((r) => r.run.nextStepId),
    environment_id: column((r) => r.run.environmentId), callback_key: column((r) => r.run.callbackKey), callback_url: column((r) => r.run.callbackUrl),
    depth: column((r) => r.run.depth), owner_id: column((r) => r.ownerId), queue_job: column((r) => r.queueJob), steps_done: column((r) => (r.trigger ? 1 : 0)),
    step_type: column((r) => r.trigger?.type ?? null), step_name: column((r) => r.trigger?.name ?? null), step_id: column((r) => r.trigger?.stepId ?? null),
    step_input: column((r) => r.trigger?.input ?? null), step_output: column((r) => r.trigger?.output ?? null), step_at: column((r) => r.trigger?.startedAt ?? null),
    claim_scope: column((r) => r.claim?.scope ?? null), claim_key: column((r) => r.claim?.key ?? null), request_hash: column((r) => r.claim?.requestHash ?? null),
  });
  return new Set(row.created);
}

/** The workflow's runs holding one of its concurrent-run slots. */
const activeRunsOf = (workflowId: string) =>
  build
    .selectFrom('workflow_runs')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('workflow_id', '=', workflowId)
    .where('status', 'in', [lit('running'), lit('waiting')]);

/**
 * Runs `write` when the workflow has a free slot: without a limit straight away, with one inside a
 * transaction that holds the workflow's advisory lock while it counts (the count runs after the
 * lock is taken, so it sees every run committed before). False when the workflow is full.
 */
export async function withinRunLimit(sql: SqlPool, workflowId: string, limit: number | null, write: (query: Query) => Promise<void>): Promise<boolean> {
  if (limit === null) {
    await write(sql.query);
    return true;
  }
  return sql.transaction(async (query) => {
    // Raw(advisory-lock): the workflow's transaction-scoped lock, held while its active runs are counted.
    await query('select pg_advisory_xact_lock(hashtextextended($1::text, 20261123))', [workflowId]);
    const [row] = await runBuilt(query, activeRunsOf(workflowId));
    if (row.n >= limit) return false;
    await write(query);
    return true;
  });
}

/** A run taken for this process, with what continuing it needs (its tenant's runtime settings too). */
export type ClaimedRunRow = StoredRunRow & TenantScopeRow & {
  workflow_id: string; workflow_key: string; version: number | null; definition: StepDef[] | null; scope: StateScope; environment_id: string | null;
  /** Times a process died while executing the run, this claim included when it takes the run from a dead process. */
  crashes: number;
};

// The tenant's runtime settings come along: a job needs them to run AI steps. A claim that takes
// the run from another process (one whose heartbeat stopped: it died executing it) counts a crash.
const CLAIM = statement<{ runId: string; tenantId: string; ownerId: string; staleAfterSeconds: number }>()('liya_workflow_run_claim', (p) =>
  build
    .updateTable('workflow_runs as r')
    .from(['workflows as w', 'tenants as t'])
    .set((eb) => ({
      owner_id: p.ownerId,
      updated_at: sql<Date>`now()`,
      crashes: eb('r.crashes', '+', eb.case().when(eb.and([eb('r.owner_id', 'is not', null), eb('r.owner_id', '<>', p.ownerId)])).then(lit(1)).else(lit(0)).end()),
    }))
    .where('r.id', '=', p.runId)
    .where('r.tenant_id', '=', p.tenantId)
    .whereRef('w.id', '=', 'r.workflow_id')
    .whereRef('t.id', '=', 'r.tenant_id')
    .where('r.status', '=', lit('running'))
    .where((eb) =>
      eb.or([
        eb('r.owner_id', 'is', null),
        eb('r.owner_id', '=', p.ownerId),
        eb.not(
          eb.exists(
            eb
              .selectFrom('worker_heartbeats as h')
              .select(lit(1).as('one'))
              .whereRef('h.worker_id', '=', 'r.owner_id')
              .where('h.last_seen_at', '>', sql<Date>`now() - make_interval(secs => ${p.staleAfterSeconds})`),
          ),
        ),
      ]),
    )
    .returning([...STORED_RUN_SELECTION, 'r.workflow_id', 'w.workflow_key', 'r.version', 'r.definition', 'r.scope', 'r.environment_id', 'r.crashes', ...TENANT_SCOPE_SELECTION]),
).as<ClaimedRunRow>();

/**
 * Takes a running run for `ownerId`: one whose owner is it, nobody, or a process whose heartbeat
 * stopped `staleAfterSeconds` ago (it crashed). Null when another live process has it or it is not running.
 */
export async function claimRun(sql: SqlPool, values: { tenantId: string; runId: string; ownerId: string; staleAfterSeconds: number }): Promise<ClaimedRunRow | null> {
  const [row] = await CLAIM.run(sql, values);
  return row ?? null;
}
