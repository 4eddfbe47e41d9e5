// The workflow_runs table (and workflow_approvals, which only change together with their run's wait); this module alone writes them.
//
// Every statement here runs on the SqlPool, the pool the whole run path (intake, steps, waits, jobs)
// uses: they stay raw SQL. The hot ones run as named prepared statements (their texts and names must
// not change); many embed graphile_worker.add_job / remove_job so a run's change and its job are one
// statement; the rest read or write the same rows on the same pool (Kysely is bound to an
// EntityManager's connection, not to the SqlPool). The erasure of one end user's runs is the
// exception: it runs through Kysely in the erasure's own transaction (at the end of the file).
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { WorkflowRunStatus } from '../../../db/column-values.js';
import { anyId } from '../../../db/id-list.js';
import { cappedCountSql, cursorTimeSql } from '../../../db/keyset.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { PageRequest } from '../../common/pagination.js';
import { TENANT_SCOPE_COLUMNS, type TenantScopeRow } from '../../tenants/tenant-scope.js';
import type { Resume, WaitKind } from '../engine/run-types.js';
import type { StepDef } from '../step-types.js';
import type { StateScope } from './workflow-state.js';
import { workflowCallbackJob, workflowContinueJob, workflowWakeJob } from '../../jobs/contracts.js';
import { addJobSql, jobKeySql, removeJobSql } from '../../jobs/store/job-queue.js';
import { claimKeysSql } from './idempotency-keys.js';


type Query = SqlPool['query'];

// ---- Run rows as the engine continues them ------------------------------------------------------

/** The columns of a run the engine needs to continue it. */
const STORED_RUN_COLUMNS = `r.id::text, r.conversation_id::text, r.input, r.next_step_id, r.steps_done, r.output, r.resume, r.callback_seq, r.callback_key, r.callback_url, r.executions, r.depth`;

export interface StoredRunRow {
  id: string;
  conversation_id: string;
  input: Record<string, unknown>;
  next_step_id: string | null;
  steps_done: number;
  output: unknown;
  resume: (Resume & { step_id?: string }) | null;
  callback_seq: number;
  callback_key: string | null;
  callback_url: string | null;
  executions: number;
  depth: number;
}

/** A run's stored row with what executing it again needs (its version or test definition). */
export type ResumableRunRow = StoredRunRow & { version: number | null; definition: StepDef[] | null };

// ---- Creating runs ------------------------------------------------------------------------------

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

const RUN_COLUMNS = `id, tenant_id, workflow_id, version, definition, scope, conversation_id, status, triggered_by, input, output,
  next_step_id, steps_done, error, environment_id, callback_key, callback_url, depth, owner_id, started_at, updated_at, completed_at`;

/**
 * The run's values: params $1..$14 of `runParams`, owner $15, each numbered `offset` higher (after a
 * guard's params); `stepsDone` is the steps_done expression (0 for a run that has run nothing).
 */
const runValues = (offset: number, stepsDone = '0') => {
  const $ = (n: number) => `$${n + offset}`;
  return `${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}::jsonb, ${$(6)}, ${$(7)}, 'running', ${$(8)}, ${$(9)}::jsonb, null, ${$(10)}, ${stepsDone}, null, ${$(11)}, ${$(12)}, ${$(13)}, ${$(14)}, ${$(15)}, now(), now(), null`;
};

/** The run's params in insert order ($1..$14 of `runValues`). */
const runParams = (run: NewRunRow) => [
  run.id, run.tenantId, run.workflowId, run.version, run.definition, run.scope, run.conversationId, run.triggeredBy, run.input, run.nextStepId,
  run.environmentId, run.callbackKey, run.callbackUrl, run.depth,
];

/** Inserts a run owned by `ownerId` (a sync run, executed by this process at once). */
export async function insertRun(sql: SqlPool, run: NewRunRow, ownerId: string): Promise<void> {
  // Asynchronous commit, like the step rows written after it (their order is kept).
  await sql.query(
    `with async_commit as (select set_config('synchronous_commit', 'off', true)) insert into workflow_runs (${RUN_COLUMNS}) select ${runValues(0)} from async_commit`,
    [...runParams(run), ownerId],
    'liya_workflow_run_create',
  );
}

/** An `insert ... returning 1` that must succeed for a queued run to be created (an idempotency key, a schedule tick). */
export interface QueuedRunGuard {
  text: string;
  params: unknown[];
}

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

/** Prepared-statement names of the queued-run statements, one per text (one per guard statement). */
const queuedRunNames = new Map<string, string>();
const queuedRunName = (text: string) => {
  let name = queuedRunNames.get(text);
  if (!name) {
    name = `liya_workflow_queued_run_${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
    queuedRunNames.set(text, name);
  }
  return name;
};

/**
 * A queued run: the guard row and the run in one statement (all or nothing), its trigger step when
 * the intake did it (`trigger`: the row, and the run positioned after it), and unless `ownerId` is
 * set (this process executes it) the job that runs it. That job's run is new, so no job can hold
 * its key yet: it is added in graphile-worker's plain-insert mode (`unsafe_dedupe`). Committed
 * durably (the caller answers that the run is accepted). A named prepared statement: its text
 * depends only on the guard statement's text, of which there are few.
 */
export async function insertQueuedRun(
  query: Query,
  values: { guard: QueuedRunGuard; run: NewRunRow; ownerId: string | null; queueJob: boolean; trigger: IntakeStepValues | null },
): Promise<{ guarded: number; created: number; queued: number }> {
  const offset = values.guard.params.length;
  const $ = (n: number) => `$${n + offset}`;
  // Raw: graphile_worker.add_job in the same statement as the run (and a guard statement given as text).
  const text = `
    with guard as (${values.guard.text}),
    run as (insert into workflow_runs (${RUN_COLUMNS}, executions) select ${runValues(offset, `${$(17)}::int`)}, ${$(17)}::int where exists (select 1 from guard) returning id),
    step as (
      insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                             cost_usd, latency_ms, error, started_at, completed_at)
      select gen_random_uuid(), ${$(2)}, 'workflow', id, 0, ${$(18)}::text, ${$(19)}::text, ${$(20)}::text, 'completed', ${$(21)}::jsonb, ${$(22)}::jsonb, 0, 0, 0, 0, null, ${$(23)}::timestamptz, ${$(24)}::timestamptz
        from run where ${$(18)}::text is not null
      returning 1),
    job as (select ${addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: `${$(2)}::text` }, { keyMode: 'unsafe_dedupe' })} from run where ${$(16)}::boolean)
    select (select count(*) from guard)::int as guarded, (select count(*) from run)::int as created, (select count(*) from job)::int as queued,
           (select count(*) from step)::int as stepped`;
  // `queued` and `stepped` are selected so those CTEs run (a CTE nobody reads is never evaluated).
  const t = values.trigger;
  const [row] = await query<{ guarded: number; created: number; queued: number }>(
    text,
    [
      ...values.guard.params, ...runParams(values.run), values.ownerId, values.queueJob, t ? 1 : 0,
      t?.type ?? null, t?.name ?? null, t?.stepId ?? null, t?.input ?? null, t?.output ?? null, t?.startedAt ?? null, t?.completedAt ?? null,
    ],
    queuedRunName(text),
  );
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

// Several queued runs in one statement (one round trip, one durable commit): each row of the arrays
// is what insertQueuedRun writes for one run, with the idempotency key claim as its guard (rows
// without a claim are not guarded). No two rows may claim the same key.
// Raw: graphile_worker.add_job, and the idempotency store's multi-row claim, in the same statement.
const QUEUED_RUNS_SQL = `
with w as (
  select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::text[], $6::text[], $7::uuid[], $8::text[], $9::text[], $10::text[], $11::uuid[],
                       $12::text[], $13::text[], $14::int[], $15::text[], $16::boolean[], $17::int[],
                       $18::text[], $19::text[], $20::text[], $21::text[], $22::text[], $23::timestamptz[], $24::text[], $25::text[], $26::text[])
    as w(id, tenant_id, workflow_id, version, definition, scope, conversation_id, triggered_by, input, next_step_id, environment_id,
         callback_key, callback_url, depth, owner_id, queue_job, steps_done,
         step_type, step_name, step_id, step_input, step_output, step_at, claim_scope, claim_key, request_hash)
),
claim as (${claimKeysSql('w')}),
run as (
  insert into workflow_runs (${RUN_COLUMNS}, executions)
  select id, tenant_id, workflow_id, version, definition::jsonb, scope, conversation_id, 'running', triggered_by, input::jsonb, null,
         next_step_id, steps_done, null, environment_id, callback_key, callback_url, depth, owner_id, now(), now(), null, steps_done
    from w where claim_key is null or id in (select run_id from claim)
  returning id
),
step as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at)
  select gen_random_uuid(), w.tenant_id, 'workflow', w.id, 0, w.step_type, w.step_name, w.step_id, 'completed', w.step_input::jsonb, w.step_output::jsonb, 0, 0, 0, 0, null, w.step_at, w.step_at
    from w join run on run.id = w.id where w.step_type is not null
  returning 1
),
job as (
  select ${addJobSql(workflowContinueJob, { run_id: 'w.id::text', tenant_id: 'w.tenant_id::text' }, { keyMode: 'unsafe_dedupe' })}
    from w join run on run.id = w.id where w.queue_job
)
select array(select id::text from run) as created, (select count(*) from step)::int + (select count(*) from job)::int as written`;

/** Writes several queued runs in one durable statement; the ids of the runs created (a run whose key was taken already is not). */
export async function insertQueuedRuns(sql: SqlPool, runs: QueuedRunValues[]): Promise<Set<string>> {
  const column = <T>(pick: (r: QueuedRunValues) => T) => runs.map(pick);
  const [row] = await sql.query<{ created: string[] }>(
    QUEUED_RUNS_SQL,
    [
      column((r) => r.run.id), column((r) => r.run.tenantId), column((r) => r.run.workflowId), column((r) => r.run.version), column((r) => r.run.definition),
      column((r) => r.run.scope), column((r) => r.run.conversationId), column((r) => r.run.triggeredBy), column((r) => r.run.input), column((r) => r.run.nextStepId),
      column((r) => r.run.environmentId), column((r) => r.run.callbackKey), column((r) => r.run.callbackUrl), column((r) => r.run.depth), column((r) => r.ownerId),
      column((r) => r.queueJob), column((r) => (r.trigger ? 1 : 0)),
      column((r) => r.trigger?.type ?? null), column((r) => r.trigger?.name ?? null), column((r) => r.trigger?.stepId ?? null), column((r) => r.trigger?.input ?? null),
      column((r) => r.trigger?.output ?? null), column((r) => r.trigger?.startedAt ?? null),
      column((r) => r.claim?.scope ?? null), column((r) => r.claim?.key ?? null), column((r) => r.claim?.requestHash ?? null),
    ],
    'liya_workflow_queued_runs',
  );
  return new Set(row.created);
}

/** Statuses that hold one of a workflow's concurrent-run slots. */
const ACTIVE_RUN_STATUSES = "('running', 'waiting')";

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
    // Raw: an advisory lock.
    await query('select pg_advisory_xact_lock(hashtextextended($1::text, 20261123))', [workflowId]);
    const [row] = await query<{ n: number }>(`select count(*)::int as n from workflow_runs where workflow_id = $1 and status in ${ACTIVE_RUN_STATUSES}`, [workflowId]);
    if (row.n >= limit) return false;
    await write(query);
    return true;
  });
}

// ---- Claiming and continuing --------------------------------------------------------------------

/** A run taken for this process, with what continuing it needs (its tenant's runtime settings too). */
export type ClaimedRunRow = StoredRunRow & TenantScopeRow & {
  workflow_id: string; workflow_key: string; version: number | null; definition: StepDef[] | null; scope: StateScope; environment_id: string | null;
  /** Times a process died while executing the run, this claim included when it takes the run from a dead process. */
  crashes: number;
};

/**
 * Takes a running run for `ownerId`: one whose owner is it, nobody, or a process whose heartbeat
 * stopped `staleAfterSeconds` ago (it crashed). Null when another live process has it or it is not running.
 */
export async function claimRun(sql: SqlPool, values: { tenantId: string; runId: string; ownerId: string; staleAfterSeconds: number }): Promise<ClaimedRunRow | null> {
  // The tenant's runtime settings come along: a job needs them to run AI steps. A claim that takes
  // the run from another process (one whose heartbeat stopped: it died executing it) counts a crash.
  const [row] = await sql.query<ClaimedRunRow>(
    `update workflow_runs r set owner_id = $3, updated_at = now(), crashes = r.crashes + case when r.owner_id is not null and r.owner_id <> $3 then 1 else 0 end
       from workflows w, tenants t
      where r.id = $1 and r.tenant_id = $2 and w.id = r.workflow_id and t.id = r.tenant_id and r.status = 'running'
        and (r.owner_id is null or r.owner_id = $3
             or not exists (select 1 from worker_heartbeats h where h.worker_id = r.owner_id and h.last_seen_at > now() - make_interval(secs => $4)))
      returning ${STORED_RUN_COLUMNS}, r.workflow_id::text, w.workflow_key, r.version, r.definition, r.scope, r.environment_id::text, r.crashes, ${TENANT_SCOPE_COLUMNS}`,
    [values.runId, values.tenantId, values.ownerId, values.staleAfterSeconds],
    'liya_workflow_run_claim',
  );
  return row ?? null;
}

/** The answer to a run waiting for input, stored with its switch back to running (owned by `ownerId`); null when another answer came first. */
export async function resumeRunWithAnswer(sql: SqlPool, values: { tenantId: string; runId: string; ownerId: string; message: string }): Promise<ResumableRunRow | null> {
  const [claimed] = await sql.query<ResumableRunRow>(
    `update workflow_runs r set status = 'running', wait_kind = null, owner_id = $3, updated_at = now(),
                resume = jsonb_build_object('step_id', next_step_id, 'kind', 'input', 'data', jsonb_build_object('message', $4::text))
          where id = $1 and tenant_id = $2 and status = 'needs_input'
          returning ${STORED_RUN_COLUMNS}, r.version, r.definition`,
    [values.runId, values.tenantId, values.ownerId, values.message],
  );
  return claimed ?? null;
}

/** A failed run set running again from its failed step (owned by `ownerId`); null when it is not failed (any more). */
export async function restartFailedRun(query: Query, values: { tenantId: string; runId: string; ownerId: string }): Promise<(ResumableRunRow & { scope: StateScope }) | null> {
  const [claimed] = await query<ResumableRunRow & { scope: StateScope }>(
    `update workflow_runs r set status = 'running', next_step_id = error->>'step_id', error = null, completed_at = null, owner_id = $3, resume = null, crashes = 0, updated_at = now()
        where id = $1 and tenant_id = $2 and status = 'failed'
        returning ${STORED_RUN_COLUMNS}, r.version, r.definition, r.scope`,
    [values.runId, values.tenantId, values.ownerId],
  );
  return claimed ?? null;
}

// ---- Step writes --------------------------------------------------------------------------------

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

const stepRowParams = (s: StepRowValues) => [
  s.tenantId, s.runId, s.index, s.type, s.name, s.stepId, s.status, s.input, s.output, s.latencyMs, s.error, s.startedAt, s.completedAt,
];

// One statement per step: its result row and the run's new position (or its end). Asynchronous
// commit, as the other run rows: ordering is kept, a crash of this process loses nothing (the
// database has it); a crash of the database loses at most the last moment. Fenced: only the
// process that owns the running run writes (one that was paused while another took the run over
// writes nothing and stops). A final status with a callback URL queues its delivery.
// Raw: the hot path's prepared statement, with graphile_worker.add_job.
const STEP_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
run as (
  update workflow_runs set next_step_id = $14, steps_done = $3 + 1, executions = $20, status = $15, output = coalesce($16::jsonb, output), error = $17::jsonb,
         resume = null, wait_kind = null, approval_id = null, resume_at = null, owner_id = case when $15 = 'running' then owner_id else null end,
         updated_at = now(), completed_at = case when $15 in ('completed', 'failed', 'cancelled', 'rejected') then now() else null end
   where id = $2 and tenant_id = $1 and status = 'running' and owner_id = $19
  returning 1
),
step as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at)
  select gen_random_uuid(), $1, 'workflow', $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, 0, 0, 0, $10, $11, $12, $13 from run
  on conflict (run_id, index) do nothing
  returning 1
),
notify as (
  select ${addJobSql(workflowCallbackJob, { run_id: '$2::text', tenant_id: '$1::text', trace_context: '$21::json' })}
    from run where $18::boolean
)
select (select count(*) from run)::int as owned, (select count(*) from step) + (select count(*) from async_commit) + (select count(*) from notify) as written`;

// A wait: the waiting step's row, the run's wait, an approval to decide and the job that wakes the
// run (a delay's end or a timeout), in one durable statement. A callback wait is refused (nothing
// written) when a callback for it arrived meanwhile: the step then runs again and takes it.
// Raw: the hot path's prepared statement, with graphile_worker.add_job.
const WAIT_SQL = `
with run as (
  update workflow_runs set next_step_id = $14, steps_done = $3 + 1, executions = $26, status = $15, wait_kind = $16, approval_id = $17::uuid, resume_at = $18,
         resume = null, owner_id = null, updated_at = now()
   where id = $2 and tenant_id = $1 and status = 'running' and owner_id = $25 and ($16 <> 'callback' or early_callback is null)
  returning workflow_id
),
step as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at)
  select gen_random_uuid(), $1, 'workflow', $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, 0, 0, 0, $10, $11, $12, $13 from run
  on conflict (run_id, index) do nothing
  returning 1
),
approval as (
  insert into workflow_approvals (id, tenant_id, workflow_id, run_id, step_id, loop_index, message, status, expires_at, created_at)
  select $17::uuid, $1, workflow_id, $2, $19, $20, $21, 'pending', $22, now() from run where $17::uuid is not null
  returning 1
),
wake as (
  select ${addJobSql(workflowWakeJob, { run_id: '$2::text', tenant_id: '$1::text', wake: '$16::text', seq: '$23::int', approval_id: '$17::text' }, { runAt: '$24' })}
    from run where $24::timestamptz is not null
)
select (select count(*) from run)::int as waited,
       (select count(*) from workflow_runs where id = $2 and status = 'running' and owner_id = $25)::int as owned,
       (select count(*) from step) + (select count(*) from approval) + (select count(*) from wake) as written`;

/** Writes a step and the run's new position; whether `ownerId` still owned the running run (otherwise nothing was written). */
export async function writeRunStep(sql: SqlPool, step: StepRowValues, run: StepRunValues): Promise<boolean> {
  const [row] = await sql.query<{ owned: number }>(
    STEP_SQL,
    [...stepRowParams(step), run.nextStepId, run.status, run.output, run.error, run.queueCallback, run.ownerId, run.executions, run.traceContext],
    'liya_workflow_step',
  );
  return row.owned > 0;
}

// Steps of several runs in one statement: the same writes as STEP_SQL, one row of the arrays per
// step (each run's own fence). The runs are found by `id = any(...)` (the primary key). The status
// is compared with a subquery's value, not a constant, so the partial index of running runs cannot
// serve the statement: its statistics, taken when few runs were running, make a scan of the whole
// index look free, and under a backlog that scan reads every running run of the process.
// Raw: the hot path's prepared statement, with graphile_worker.add_job.
const STEPS_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
w as (
  select * from unnest($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::int[], $11::text[],
                       $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[], $16::text[], $17::text[], $18::boolean[], $19::text[], $20::int[],
                       $21::text[])
    as w(tenant_id, run_id, idx, type, name, step_id, status, input, output, latency_ms, error, started_at, completed_at,
         next_step_id, run_status, run_output, run_error, queue_callback, owner_id, executions, trace_context)
),
run as (
  update workflow_runs r set next_step_id = w.next_step_id, steps_done = w.idx + 1, executions = w.executions, status = w.run_status,
         output = coalesce(w.run_output::jsonb, r.output), error = w.run_error::jsonb,
         resume = null, wait_kind = null, approval_id = null, resume_at = null, owner_id = case when w.run_status = 'running' then r.owner_id else null end,
         updated_at = now(), completed_at = case when w.run_status in ('completed', 'failed', 'cancelled', 'rejected') then now() else null end
    from w
   where r.id = any($2::uuid[]) and r.id = w.run_id and r.tenant_id = w.tenant_id and r.owner_id = w.owner_id and r.status = (select 'running'::text)
  returning r.id, r.tenant_id, w.queue_callback, w.trace_context
),
step as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at)
  select gen_random_uuid(), w.tenant_id, 'workflow', w.run_id, w.idx, w.type, w.name, w.step_id, w.status, w.input::jsonb, w.output::jsonb, 0, 0, 0,
         w.latency_ms, w.error, w.started_at, w.completed_at
    from w join run on run.id = w.run_id
  on conflict (run_id, index) do nothing
  returning 1
),
notify as (
  select ${addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: 'tenant_id::text', trace_context: 'trace_context::json' })}
    from run where queue_callback
)
select array(select id::text from run) as owned, (select count(*) from step) + (select count(*) from async_commit) + (select count(*) from notify) as written`;

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

/**
 * Writes the steps of several runs (at most one each) and their runs' new positions in one
 * statement, as `writeRunStep` writes one; the ids of the runs `ownerId` still owned (the others
 * got nothing written).
 */
export async function writeRunSteps(sql: SqlPool, writes: { step: StepRowValues; run: StepRunValues }[]): Promise<Set<string>> {
  const column = <T>(pick: (w: { step: StepRowValues; run: StepRunValues }) => T) => writes.map(pick);
  const [row] = await sql.query<{ owned: string[] }>(
    STEPS_SQL,
    [
      column((w) => w.step.tenantId), column((w) => w.step.runId), column((w) => w.step.index), column((w) => w.step.type), column((w) => w.step.name),
      column((w) => w.step.stepId), column((w) => w.step.status), column((w) => w.step.input), column((w) => w.step.output), column((w) => w.step.latencyMs),
      column((w) => w.step.error), column((w) => w.step.startedAt), column((w) => w.step.completedAt), column((w) => w.run.nextStepId), column((w) => w.run.status),
      column((w) => w.run.output), column((w) => w.run.error), column((w) => w.run.queueCallback), column((w) => w.run.ownerId), column((w) => w.run.executions),
      column((w) => w.run.traceContext),
    ],
    'liya_workflow_steps',
  );
  return new Set(row.owned);
}

/** Writes a waiting step with the run's wait (and its approval and wake-up job). Not `waited` when a callback arrived first; not `owned` when `ownerId` lost the run. */
export async function writeRunWait(
  sql: SqlPool,
  step: StepRowValues,
  wait: {
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
  },
): Promise<{ waited: boolean; owned: boolean }> {
  const [row] = await sql.query<{ waited: number; owned: number }>(
    WAIT_SQL,
    [
      ...stepRowParams(step), wait.nextStepId, wait.status, wait.kind, wait.approvalId, wait.resumeAt,
      wait.approvalStepId, wait.loopIndex, wait.message, wait.approvalExpiresAt,
      wait.callbackSeq, wait.wakeAt, wait.ownerId, wait.executions,
    ],
    'liya_workflow_wait',
  );
  return { waited: row.waited > 0, owned: row.owned > 0 };
}

/** A run with no step to run ends completed as it stands. */
export async function completeEmptyRun(sql: SqlPool, tenantId: string, runId: string): Promise<void> {
  await sql.query(`update workflow_runs set status = 'completed', owner_id = null, completed_at = now(), updated_at = now() where id = $1 and tenant_id = $2 and status = 'running'`, [runId, tenantId]);
}

/** Fails a run with `error` (stored as given). */
export async function failRun(sql: SqlPool, tenantId: string, runId: string, error: Record<string, unknown>): Promise<void> {
  await sql.query(
    `update workflow_runs set status = 'failed', owner_id = null, completed_at = now(), updated_at = now(), error = $3::jsonb where id = $1 and tenant_id = $2`,
    [runId, tenantId, JSON.stringify(error)],
  );
}

/** A callback that came before the run reached its wait_for_callback step, moved into `resume` for `stepId`; null when none waits. */
export async function takeEarlyCallback(sql: SqlPool, tenantId: string, runId: string, stepId: string): Promise<{ resume: { step_id: string; data: Record<string, unknown> } } | null> {
  const [early] = await sql.query<{ resume: { step_id: string; data: Record<string, unknown> } }>(
    `update workflow_runs set resume = jsonb_build_object('step_id', $3::text, 'kind', 'callback', 'data', jsonb_build_object('body', early_callback->'body', 'received_at', early_callback->'received_at')),
              early_callback = null, callback_seq = callback_seq + 1, updated_at = now()
        where id = $1 and tenant_id = $2 and early_callback is not null and (early_callback->>'seq')::int = callback_seq
        returning resume`,
    [runId, tenantId, stepId],
  );
  return early ?? null;
}

// ---- Waits ending -------------------------------------------------------------------------------

// Each wake ends its wait only if the run still waits for exactly that (a decision, a callback or a
// cancel may have come first), storing how the step goes on with the switch back to running.
const WAKE_SQL: Record<'delay' | 'approval' | 'callback', string> = {
  delay: `update workflow_runs set status = 'running', wait_kind = null, owner_id = null, updated_at = now(),
                 resume = jsonb_build_object('step_id', next_step_id, 'kind', 'delay', 'data', jsonb_build_object('resume_at', resume_at)), resume_at = null
           where id = $1 and tenant_id = $2 and status = 'waiting' and wait_kind = 'delay' and $3::int is not null`,
  approval: `with a as (update workflow_approvals set status = 'timed_out', decided_at = now() where id = $4::uuid and run_id = $1 and status = 'pending' returning id)
             update workflow_runs set status = 'running', wait_kind = null, approval_id = null, owner_id = null, updated_at = now(),
                    resume = jsonb_build_object('step_id', next_step_id, 'kind', 'approval', 'data', jsonb_build_object('timed_out', true, 'approval_id', $4::text))
              where id = $1 and tenant_id = $2 and status = 'awaiting_approval' and approval_id = $4::uuid and exists (select 1 from a) and $3::int is not null`,
  callback: `update workflow_runs set status = 'running', wait_kind = null, owner_id = null, updated_at = now(), callback_seq = callback_seq + 1,
                    resume = jsonb_build_object('step_id', next_step_id, 'kind', 'callback', 'data', jsonb_build_object('timed_out', true))
              where id = $1 and tenant_id = $2 and status = 'waiting' and wait_kind = 'callback' and callback_seq = $3::int`,
};

/** Ends the wait a wake-up job was planned for (a delay's end, an approval's or callback's timeout), if it still stands. */
export async function wakeRun(sql: SqlPool, values: { runId: string; tenantId: string; wake: 'delay' | 'approval' | 'callback'; seq: number; approvalId: string | null }): Promise<void> {
  const params = [values.runId, values.tenantId, values.seq];
  await sql.query(WAKE_SQL[values.wake], values.wake === 'approval' ? [...params, values.approvalId] : params);
}

// Raw: graphile_worker.remove_job / add_job in the same statement as the decision.
const DECIDE_SQL = `
with a as (
  update workflow_approvals set status = $3, comment = $4, decided_by = $5, decided_at = now()
   where id = $1 and tenant_id = $2 and status = 'pending'
  returning *
),
r as (
  update workflow_runs r set status = 'running', wait_kind = null, approval_id = null, owner_id = null, updated_at = now(),
         resume = jsonb_build_object('step_id', r.next_step_id, 'kind', 'approval', 'data',
                    jsonb_build_object('approval_id', $1::text, 'decision', $6::text, 'comment', $4::text, 'decided_by', $5::text, 'decided_at', now()))
    from a
   where r.id = a.run_id and r.status = 'awaiting_approval' and r.approval_id = a.id
  returning r.id, r.tenant_id
),
timeout as (select ${removeJobSql(workflowWakeJob, 'id::text')} from r),
job as (
  select ${addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' })}
    from r
)
select (select count(*) from a)::int as decided, (select count(*) from job)::int + 0 * (select count(*) from timeout)::int as continued`;

/**
 * Decides a pending approval: the approval and the run's switch back to running (with the decision
 * stored as how the step goes on) change in one statement, and a job continues the run.
 */
export async function saveApprovalDecision(
  sql: SqlPool,
  values: { approvalId: string; tenantId: string; status: 'approved' | 'rejected'; comment: string | null; decidedBy: string; decision: 'approve' | 'reject' },
): Promise<{ decided: number; continued: number }> {
  const [row] = await sql.query<{ decided: number; continued: number }>(DECIDE_SQL, [values.approvalId, values.tenantId, values.status, values.comment, values.decidedBy, values.decision]);
  return row;
}

/** A callback for the wait the run stands at: the run goes on (a job continues it). Null when it does not wait there. */
export async function wakeRunWithCallback(sql: SqlPool, runId: string, seq: number, received: string): Promise<{ id: string } | null> {
  // Raw: graphile_worker.remove_job / add_job in the same statement.
  const [woken] = await sql.query<{ id: string }>(
    `with r as (
         update workflow_runs set status = 'running', wait_kind = null, owner_id = null, callback_seq = callback_seq + 1, updated_at = now(),
                resume = jsonb_build_object('step_id', next_step_id, 'kind', 'callback', 'data', jsonb_build_object('body', $3::jsonb -> 'body', 'received_at', $3::jsonb -> 'received_at'))
          where id = $1 and status = 'waiting' and wait_kind = 'callback' and callback_seq = $2
         returning id, tenant_id),
       timeout as (select ${removeJobSql(workflowWakeJob, 'id::text')} from r),
       job as (select ${addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' })} from r)
       select id::text from r where (select count(*) from job) + 0 * (select count(*) from timeout) >= 0`,
    [runId, seq, received],
  );
  return woken ?? null;
}

/** A callback for a wait the run has not reached yet, kept until it does. Null when it cannot be kept. */
export async function keepEarlyCallback(sql: SqlPool, runId: string, seq: number, received: string): Promise<{ id: string } | null> {
  const [early] = await sql.query<{ id: string }>(
    `update workflow_runs set early_callback = $3::jsonb, updated_at = now()
        where id = $1 and status in ('running', 'waiting', 'awaiting_approval', 'needs_input') and coalesce(wait_kind, '') <> 'callback'
          and callback_seq = $2 and early_callback is null returning id::text`,
    [runId, seq, received],
  );
  return early ?? null;
}

/** Where a run stands with its callbacks. */
export async function findRunCallbackState(sql: SqlPool, runId: string) {
  const [now] = await sql.query<{ status: string; callback_seq: number; early_seq: number | null; wait_kind: string | null }>(
    `select status, callback_seq, (early_callback->>'seq')::int as early_seq, wait_kind from workflow_runs where id = $1`,
    [runId],
  );
  return now ?? null;
}

/** The key a run's callback tokens are signed with. */
export async function findRunCallbackKey(sql: SqlPool, runId: string): Promise<{ callback_key: string | null } | null> {
  const [run] = await sql.query<{ callback_key: string | null }>('select callback_key from workflow_runs where id = $1', [runId], 'liya_callback_key');
  return run ?? null;
}

// ---- Ending runs --------------------------------------------------------------------------------

/** A run whose tenant is inactive fails. */
export async function failRunOfInactiveTenant(sql: SqlPool, runId: string): Promise<void> {
  await sql.query(
    `update workflow_runs set status = 'failed', owner_id = null, completed_at = now(), updated_at = now(), error = '{"code":"TENANT_INACTIVE","message":"The tenant is inactive"}'::jsonb where id = $1`,
    [runId],
  );
}

/** A poison run fails at its step (when `ownerId` still has it), its callback queued like any final run's. */
export async function failCrashedRun(sql: SqlPool, values: { runId: string; tenantId: string; crashes: number; ownerId: string }): Promise<void> {
  // Raw: graphile_worker.add_job in the same statement.
  await sql.query(
    `with failed as (
       update workflow_runs set status = 'failed', owner_id = null, completed_at = now(), updated_at = now(),
              error = jsonb_build_object('code', 'RUN_CRASHED', 'step_id', next_step_id, 'crashes', $3::int,
                                         'message', 'The process executing this run stopped ' || $3::int || ' times while running it; it is not continued again (retry it to try once more)')
        where id = $1 and tenant_id = $2 and status = 'running' and owner_id = $4
       returning id, callback_url)
     select ${addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: '$2::text' })}
       from failed where callback_url is not null`,
    [values.runId, values.tenantId, values.crashes, values.ownerId],
  );
}

/** A running run fails after its job's last attempt, its callback queued like any final run's. */
export async function failGivenUpRun(sql: SqlPool, runId: string, tenantId: string): Promise<void> {
  // Raw: graphile_worker.add_job in the same statement.
  await sql.query(
    `with failed as (
       update workflow_runs set status = 'failed', owner_id = null, completed_at = now(), updated_at = now(),
              error = jsonb_build_object('code', 'INTERNAL_ERROR', 'message', 'The run stopped after repeated unexpected errors; retry it to continue', 'step_id', next_step_id)
        where id = $1 and tenant_id = $2 and status = 'running'
       returning id, callback_url)
     select ${addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: '$2::text' })}
       from failed where callback_url is not null`,
    [runId, tenantId],
  );
}

/** Cancels a waiting run: pending wake-up jobs go, a pending approval is cancelled, a callback is queued. `status` is the run's status after (null: no such run). */
export async function cancelWaitingRun(sql: SqlPool, tenantId: string, workflowId: string, runId: string): Promise<{ cancelled: number; status: WorkflowRunStatus | null } | null> {
  // Raw: graphile_worker.remove_job / add_job in the same statement.
  const [row] = await sql.query<{ cancelled: number; status: WorkflowRunStatus | null }>(
    `with r as (
           update workflow_runs set status = 'cancelled', wait_kind = null, approval_id = null, resume_at = null, resume = null, owner_id = null,
                  completed_at = now(), updated_at = now()
            where id = $1 and tenant_id = $2 and workflow_id = $3 and status in ('waiting', 'awaiting_approval', 'needs_input')
           returning id, callback_url),
         a as (update workflow_approvals set status = 'cancelled', decided_at = now() where run_id in (select id from r) and status = 'pending' returning 1),
         j as (select ${removeJobSql(workflowWakeJob, 'id::text')} from r),
         n as (select ${addJobSql(workflowCallbackJob, { run_id: 'id::text', tenant_id: '$2::text' })}
                 from r where callback_url is not null)
         select ((select count(*) from r) + 0 * ((select count(*) from a) + (select count(*) from j) + (select count(*) from n)))::int as cancelled,
                (select status from workflow_runs where id = $1 and tenant_id = $2 and workflow_id = $3) as status`,
    [runId, tenantId, workflowId],
  );
  return row ?? null;
}

// ---- Hand-over and recovery ---------------------------------------------------------------------

/** Clears `ownerId`'s ownership of runs it has not started and queues a job for each. */
const HANDOVER_SQL = `
with r as (
  update workflow_runs set owner_id = null, updated_at = now()
   where id = any($1::uuid[]) and status = 'running' and owner_id = $2
  returning id, tenant_id)
select count(${addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' }, { keyMode: 'preserve_run_at' })})::int as queued
  from r`;

/** Gives runs `ownerId` holds but has not started to the job runner (raw: graphile_worker.add_job in the same statement). */
export async function handOverRuns(sql: SqlPool, runIds: string[], ownerId: string): Promise<void> {
  await sql.query(HANDOVER_SQL, [runIds, ownerId]);
}

/**
 * Runs left running by a process that stopped (no update for `idleSeconds`, owner's heartbeat older
 * than `staleAfterSeconds`), and queued runs whose job is gone, get a job that continues them.
 */
export async function queueOrphanedRuns(sql: SqlPool, idleSeconds: number, staleAfterSeconds: number): Promise<{ id: string }[]> {
  // Raw: graphile_worker's job table and add_job.
  return sql.query<{ id: string }>(
    `with orphans as (
       select r.id, r.tenant_id from workflow_runs r
        where r.status = 'running' and r.updated_at < now() - make_interval(secs => $1)
          and (r.owner_id is null
               or not exists (select 1 from worker_heartbeats h where h.worker_id = r.owner_id and h.last_seen_at > now() - make_interval(secs => $2)))
          and not exists (select 1 from graphile_worker._private_jobs j where j.key = ${jobKeySql(workflowContinueJob, 'r.id::text')})
        limit 500)
     select id::text, ${addJobSql(workflowContinueJob, { run_id: 'id::text', tenant_id: 'tenant_id::text' }, { keyMode: 'preserve_run_at' })} is not null as queued
       from orphans`,
    [idleSeconds, staleAfterSeconds],
  );
}

// ---- Reads --------------------------------------------------------------------------------------

/** A run's conversation, status and output. */
export async function findRunOutcome(sql: SqlPool, tenantId: string, runId: string) {
  const [row] = await sql.query<{ conversation_id: string; status: WorkflowRunStatus; output: unknown }>(
    'select conversation_id::text, status, output from workflow_runs where id = $1 and tenant_id = $2',
    [runId, tenantId],
  );
  return row;
}

/** Whether the run exists (any tenant). */
export const runExists = async (sql: SqlPool, runId: string) => (await sql.query('select 1 from workflow_runs where id = $1', [runId])).length > 0;

/** A run's status, or null when there is no such run. */
export async function findRunStatus(sql: SqlPool, tenantId: string, runId: string): Promise<{ status: WorkflowRunStatus } | null> {
  const [row] = await sql.query<{ status: WorkflowRunStatus }>('select status from workflow_runs where id = $1 and tenant_id = $2', [runId, tenantId]);
  return row ?? null;
}

/** A run's status by its id alone. */
export async function findRunStatusById(sql: SqlPool, runId: string): Promise<{ status: string } | null> {
  const [run] = await sql.query<{ status: string }>('select status from workflow_runs where id = $1', [runId]);
  return run ?? null;
}

/** The latest run of a conversation that waits for input. */
export async function findRunWaitingForInput(sql: SqlPool, tenantId: string, workflowId: string, conversationId: string): Promise<{ id: string } | null> {
  const [waiting] = await sql.query<{ id: string }>(
    `select id::text from workflow_runs where tenant_id = $1 and workflow_id = $2 and conversation_id = $3 and status = 'needs_input' order by started_at desc limit 1`,
    [tenantId, workflowId, conversationId],
  );
  return waiting ?? null;
}

/** What a run endpoint answers of a stored run (besides its steps). */
export async function findRunResult(sql: SqlPool, tenantId: string, runId: string) {
  const [row] = await sql.query<{ conversation_id: string; status: WorkflowRunStatus; output: unknown; approval_id: string | null; resume_at: Date | null }>(
    'select conversation_id::text, status, output, approval_id::text, resume_at from workflow_runs where id = $1 and tenant_id = $2',
    [runId, tenantId],
  );
  return row ?? null;
}

export interface RunRow {
  id: string;
  conversation_id: string;
  version: number | null;
  scope: StateScope;
  status: WorkflowRunStatus;
  triggered_by: string;
  input: Record<string, unknown>;
  output: unknown;
  error: Record<string, unknown> | null;
  steps_done: number;
  approval_id: string | null;
  resume_at: Date | null;
  started_at: Date;
  completed_at: Date | null;
}

const RUN_ROW_COLUMNS = 'id::text, conversation_id::text, version, scope, status, triggered_by, input, output, error, steps_done, approval_id::text, resume_at, started_at, completed_at';

/** The conditions of a workflow's run list, written for the filter given (each has its index). */
function runsWhere(tenantId: string, workflowId: string, status: WorkflowRunStatus | null) {
  const params: unknown[] = [tenantId, workflowId];
  const conditions = ['tenant_id = $1', 'workflow_id = $2'];
  // No `($n is null or status = $n)`: with it the planner cannot use the status index, and the
  // count read every run of the workflow.
  if (status !== null) conditions.push(`status = $${params.push(status)}`);
  return { conditions, params };
}

/**
 * A workflow's runs, newest first (ties by id), optionally of one status, and one more row when there
 * is a next page; on (tenant_id, workflow_id[, status], started_at desc, id desc), from the offset or
 * the cursor.
 */
export async function listRuns(sql: SqlPool, tenantId: string, workflowId: string, status: WorkflowRunStatus | null, page: PageRequest): Promise<(RunRow & { cursor_key: string })[]> {
  const { conditions, params } = runsWhere(tenantId, workflowId, status);
  if (page.after) conditions.push(`(started_at, id) < ($${params.push(page.after.key)}::timestamptz, $${params.push(page.after.id)}::uuid)`);
  return sql.query<RunRow & { cursor_key: string }>(
    `select ${RUN_ROW_COLUMNS}, ${cursorTimeSql('started_at')} as cursor_key from workflow_runs where ${conditions.join(' and ')}
      order by started_at desc, id desc limit $${params.push(page.limit + 1)} offset $${params.push(page.offset)}`,
    params,
  );
}

/** How many runs `listRuns` pages through, counted up to `cap` + 1 (pageOfRows says how far). */
export async function countRuns(sql: SqlPool, tenantId: string, workflowId: string, status: WorkflowRunStatus | null, cap: number): Promise<number> {
  const { conditions, params } = runsWhere(tenantId, workflowId, status);
  const [count] = await sql.query<{ n: number }>(cappedCountSql(`select 1 from workflow_runs where ${conditions.join(' and ')}`, cap), params);
  return count.n;
}

/** A run of the workflow. */
export async function findRun(sql: SqlPool, tenantId: string, workflowId: string, runId: string): Promise<RunRow | null> {
  const [row] = await sql.query<RunRow>(`select ${RUN_ROW_COLUMNS} from workflow_runs where id = $1 and tenant_id = $2 and workflow_id = $3`, [runId, tenantId, workflowId]);
  return row ?? null;
}

/** A run of the tenant by its id alone. */
export async function findRunById(sql: SqlPool, tenantId: string, runId: string): Promise<RunRow | null> {
  const [row] = await sql.query<RunRow>(`select ${RUN_ROW_COLUMNS} from workflow_runs where id = $1 and tenant_id = $2`, [runId, tenantId]);
  return row ?? null;
}

/** The workflow a run of the tenant belongs to. */
export async function findRunWorkflowId(sql: SqlPool, tenantId: string, runId: string): Promise<{ workflow_id: string } | null> {
  const [row] = await sql.query<{ workflow_id: string }>('select workflow_id::text from workflow_runs where id = $1 and tenant_id = $2', [runId, tenantId]);
  return row ?? null;
}

/** What deciding whether a run can be retried needs. */
export async function findRunRetryState(sql: SqlPool, tenantId: string, workflowId: string, runId: string) {
  const [row] = await sql.query<{ status: WorkflowRunStatus; steps_done: number; error: { step_id?: string } | null }>(
    'select status, steps_done, error from workflow_runs where id = $1 and tenant_id = $2 and workflow_id = $3',
    [runId, tenantId, workflowId],
  );
  return row ?? null;
}

/** A run's callback URL and status, with its workflow's stored webhook secret. */
export async function findRunCallback(sql: SqlPool, tenantId: string, runId: string) {
  const [row] = await sql.query<{ workflow_id: string; callback_url: string | null; status: string; webhook_secret: string | null }>(
    `select r.workflow_id::text, r.callback_url, r.status, w.webhook_secret from workflow_runs r join workflows w on w.id = r.workflow_id where r.id = $1 and r.tenant_id = $2`,
    [runId, tenantId],
  );
  return row ?? null;
}

// ---- Erasing one end user -------------------------------------------------------------------------

// The runs whose input names the end user: `input ? 'user_id'` repeats the partial index's
// predicate, so the planner may take (tenant_id, input->>'user_id').
const userRuns = (em: EntityManager, tenantId: string, userId: string) =>
  kyselyOf(em)
    .selectFrom('workflow_runs')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`input ? 'user_id'`)
    .where(sql<string>`input ->> 'user_id'`, '=', userId);

/** Up to `limit` of the runs whose input's `user_id` is the end user. */
export async function listUserRunIds(em: EntityManager, tenantId: string, userId: string, limit: number): Promise<string[]> {
  const rows = await userRuns(em, tenantId, userId).select('id').limit(limit).execute();
  return rows.map((r) => r.id);
}

/** How many of those runs are executing now. */
export async function countRunningUserRuns(em: EntityManager, tenantId: string, userId: string): Promise<number> {
  const row = await userRuns(em, tenantId, userId).select(sql<number>`count(*)::int`.as('n')).where('status', '=', 'running').executeTakeFirstOrThrow();
  return row.n;
}

/** The tenant's runs among `ids`. */
export async function findRunsNamed(em: EntityManager, tenantId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await kyselyOf(em).selectFrom('workflow_runs').select('id').where('tenant_id', '=', tenantId).where(anyId('id', ids)).execute();
  return rows.map((r) => r.id);
}

/**
 * Deletes the tenant's runs `ids` with their approvals; how many of each. A job still queued for one
 * of them finds no run and ends (every task is written for that).
 */
export async function deleteRunsWithApprovals(em: EntityManager, tenantId: string, ids: string[]): Promise<{ runs: number; approvals: number }> {
  if (!ids.length) return { runs: 0, approvals: 0 };
  const db = kyselyOf(em);
  // The approvals by their own statement, so they are counted (the foreign key would take them silently).
  const approvals = await db.deleteFrom('workflow_approvals').where('tenant_id', '=', tenantId).where(anyId('run_id', ids)).executeTakeFirst();
  const runs = await db.deleteFrom('workflow_runs').where('tenant_id', '=', tenantId).where(anyId('id', ids)).executeTakeFirst();
  return { runs: Number(runs.numDeletedRows ?? 0n), approvals: Number(approvals.numDeletedRows ?? 0n) };
}
