// The step engine. A run is a row; the loop reads where it stands (the steps already done and the
// next step's id), runs one step, and writes that step's result together with the new position in
// one statement before the next step starts. So a run stopped anywhere (a pause for input, a crash)
// continues from what is stored, in any process. Sync runs, streams and test runs share it.
import { randomUUID } from 'node:crypto';
import type { WorkflowRunStatus } from '../../../db/entities/workflow.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { EntityManager } from '../../../db/orm.js';
import type { AgentRunScope } from '../../agents/run-agent.js';
import type { AppDeps } from '../../deps.js';
import { boundedJson, readRunSteps } from '../../runs/run-steps.js';
import type { StepDef } from '../step-types.js';
import { findNextByOrder } from '../validate-definition.js';
import { executeStep, nextInOrder, type StepContext, type StepResult } from './execute-step.js';
import { loadState, type StateScope } from './workflow-state.js';
import { renderTemplate } from './templates.js';

/** Steps one run may take (loops count once): a guard against a definition that never ends. */
export const MAX_STEPS_PER_RUN = 1000;

export interface TraceEntry {
  step_id: string | null;
  step_type: string;
  name: string;
  status: string;
  input: unknown;
  output: unknown;
  error: string | null;
  started_at: string;
  completed_at: string;
}

export type WorkflowRunEvent =
  | { event: 'run.started'; data: { run_id: string; conversation_id: string; workflow_key: string } }
  | { event: 'step.started'; data: { step_id: string; step_type: string; name: string | null } }
  | { event: 'step.completed'; data: TraceEntry };

export interface WorkflowRunResult {
  run_id: string;
  conversation_id: string;
  status: WorkflowRunStatus;
  output: unknown;
  trace: TraceEntry[];
}

export interface RunTarget {
  scope: AgentRunScope;
  workflow: { id: string; key: string };
  steps: StepDef[];
  version: number | null;
  stateScope: StateScope;
}

/** A compiled definition: steps by id and each step's successor by order, built once per version. */
interface Definition {
  byId: Map<string, StepDef>;
  nextOf: Map<string, string | null>;
  trigger: StepDef | null;
  /** Whether any template or expression reads `state` (otherwise saved values need not be loaded). */
  readsState: boolean;
}

const definitions = new WeakMap<StepDef[], Definition>();

function compileDefinition(steps: StepDef[]): Definition {
  let compiled = definitions.get(steps);
  if (!compiled) {
    compiled = {
      byId: new Map(steps.map((s) => [s.id, s])),
      nextOf: findNextByOrder(steps),
      trigger: steps.find((s) => s.step_type === 'trigger') ?? null,
      readsState: /\bstate\s*(\.|\[)/.test(JSON.stringify(steps.map((s) => s.config))),
    };
    definitions.set(steps, compiled);
  }
  return compiled;
}

async function loadStoredRun(sql: SqlPool, tenantId: string, runId: string): Promise<StoredRun> {
  const [row] = await sql.query<{ conversation_id: string; input: Record<string, unknown>; next_step_id: string | null; steps_done: number; output: unknown }>(
    'select conversation_id::text, input, next_step_id, steps_done, output from workflow_runs where id = $1 and tenant_id = $2',
    [runId, tenantId],
    'liya_workflow_run_load',
  );
  return { id: runId, conversationId: row.conversation_id, input: row.input, nextStepId: row.next_step_id, stepsDone: row.steps_done, output: row.output };
}

/** Creates the run row, positioned at the trigger step. */
export async function createWorkflowRun(
  sql: SqlPool,
  target: RunTarget,
  input: Record<string, unknown>,
  options: { conversationId?: string; triggeredBy: string },
): Promise<StoredRun> {
  const runId = randomUUID();
  const conversationId = options.conversationId ?? randomUUID();
  const trigger = compileDefinition(target.steps).trigger;
  // Asynchronous commit, like the step rows written after it (their order is kept).
  await sql.query(
    `with async_commit as (select set_config('synchronous_commit', 'off', true))
     insert into workflow_runs (id, tenant_id, workflow_id, version, definition, scope, conversation_id, status, triggered_by, input, output,
                                next_step_id, steps_done, error, started_at, updated_at, completed_at)
     select $1, $2, $3, $4, $5::jsonb, $6, $7, 'running', $8, $9::jsonb, null, $10, 0, null, now(), now(), null from async_commit`,
    [
      runId, target.scope.tenantId, target.workflow.id, target.version, target.version === null ? JSON.stringify(target.steps) : null,
      target.stateScope, conversationId, options.triggeredBy, JSON.stringify(input), trigger?.id ?? null,
    ],
    'liya_workflow_run_create',
  );
  return { id: runId, conversationId, input, nextStepId: trigger?.id ?? null, stepsDone: 0, output: null };
}

/** Where a run stands, as stored. */
export interface StoredRun {
  id: string;
  conversationId: string;
  input: Record<string, unknown>;
  nextStepId: string | null;
  stepsDone: number;
  output: unknown;
}

// One statement per step: its result row and the run's new position (or its end). Asynchronous
// commit, as the other run rows: ordering is kept, a crash loses at most the last moment.
const STEP_SQL = `
with async_commit as (select set_config('synchronous_commit', 'off', true)),
step as (
  insert into run_steps (id, tenant_id, run_kind, run_id, index, type, name, step_id, status, input, output, prompt_tokens, completion_tokens,
                         cost_usd, latency_ms, error, started_at, completed_at)
  values (gen_random_uuid(), $1, 'workflow', $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, 0, 0, 0, $10, $11, $12, $13)
  on conflict (run_id, index) do nothing
  returning 1
),
run as (
  update workflow_runs set next_step_id = $14, steps_done = $3 + 1, status = $15, output = coalesce($16::jsonb, output), error = $17::jsonb,
         updated_at = now(), completed_at = case when $15 in ('completed', 'failed', 'cancelled', 'rejected') then now() else null end
   where id = $2 and tenant_id = $1
  returning 1
)
select (select count(*) from step) + (select count(*) from run) + (select count(*) from async_commit) as written`;

interface StepWrite {
  index: number;
  step: StepDef;
  status: string;
  input: unknown;
  output: unknown;
  error: string | null;
  started: Date;
  latencyMs: number;
  next: string | null;
  runStatus: WorkflowRunStatus;
  runOutput: unknown;
  runError: Record<string, unknown> | null;
}

async function writeStep(sql: SqlPool, tenantId: string, runId: string, w: StepWrite): Promise<Date> {
  const completed = new Date();
  await sql.query(
    STEP_SQL,
    [
      tenantId, runId, w.index, w.step.step_type, (w.step.name ?? w.step.id).slice(0, 200), w.step.id, w.status, boundedJson(w.input), boundedJson(w.output),
      Math.round(w.latencyMs), w.error?.slice(0, 4000) ?? null, w.started, completed, w.next, w.runStatus,
      w.runOutput === undefined ? null : JSON.stringify(w.runOutput), w.runError === null ? null : JSON.stringify(w.runError),
    ],
    'liya_workflow_step',
  );
  return completed;
}

const toTrace = (w: StepWrite, completed: Date): TraceEntry => ({
  step_id: w.step.id,
  step_type: w.step.step_type,
  name: w.step.name ?? w.step.id,
  status: w.status,
  input: w.input,
  output: w.output,
  error: w.error,
  started_at: w.started.toISOString(),
  completed_at: completed.toISOString(),
});

/** What a step was given, for the trace: the config with its templates filled in (expressions as written). */
function describeInput(step: StepDef, vars: Record<string, unknown>): unknown {
  if (step.step_type === 'trigger') return null;
  if (step.step_type === 'condition' || step.step_type === 'switch' || step.step_type === 'loop') return step.config;
  return renderTemplate(step.config, vars);
}

/**
 * Runs from the run's stored position until it ends or pauses. `resume` continues a paused
 * ai_agent step with the user's answer.
 */
export async function executeWorkflowRun(
  em: EntityManager,
  deps: AppDeps,
  target: RunTarget,
  stored: string | StoredRun,
  options: { onEvent?: (event: WorkflowRunEvent) => void; resume?: { message: string } } = {},
): Promise<WorkflowRunResult> {
  const emit = options.onEvent ?? (() => undefined);
  // A run just created is passed as it was written; any other is read back from its row.
  const run = typeof stored === 'string' ? await loadStoredRun(deps.sql, target.scope.tenantId, stored) : stored;
  const runId = run.id;
  const definition = compileDefinition(target.steps);
  const done = run.stepsDone > 0 ? await readRunSteps(deps.sql, target.scope.tenantId, 'workflow', runId) : [];
  const stepsVar: Record<string, { output: unknown; status: string }> = {};
  const trace: TraceEntry[] = done.map((s) => ({
    step_id: s.step_id, step_type: s.type, name: s.name, status: s.status, input: s.input, output: s.output, error: s.error, started_at: s.started_at, completed_at: s.completed_at,
  }));
  for (const s of done) if (s.step_id) stepsVar[s.step_id] = { output: s.output, status: s.status };
  const stateKey = { tenantId: target.scope.tenantId, workflowId: target.workflow.id, scope: target.stateScope };
  const vars: Record<string, unknown> = {
    trigger: run.input,
    steps: stepsVar,
    // Saved values are read for templates and expressions only when the definition refers to them.
    state: definition.readsState ? await loadState(deps.sql, stateKey) : {},
    run: { id: runId, conversation_id: run.conversationId, scope: target.stateScope, callback_url: null },
  };
  emit({ event: 'run.started', data: { run_id: runId, conversation_id: run.conversationId, workflow_key: target.workflow.key } });

  // A paused agent step is continued with the answer, in the session it asked in.
  let resume: StepContext['resume'] = null;
  if (options.resume && run.nextStepId) {
    const paused = [...done].reverse().find((s) => s.step_id === run.nextStepId && s.status === 'needs_input');
    const sessionId = (paused?.output as { session_id?: string } | null)?.session_id ?? null;
    resume = { stepId: run.nextStepId, message: options.resume.message, sessionId };
    await deps.sql.query(`update workflow_runs set status = 'running', updated_at = now() where id = $1 and tenant_id = $2`, [runId, target.scope.tenantId]);
  }
  const ctx: StepContext = {
    em, deps, scope: target.scope, workflow: target.workflow, run: { id: runId, conversationId: run.conversationId, scope: target.stateScope },
    state: stateKey, vars, byId: definition.byId, nextOf: definition.nextOf, resume,
  };

  let stepId = run.nextStepId;
  let index = run.stepsDone;
  let status: WorkflowRunStatus = 'completed';
  let output: unknown = run.output;
  while (stepId) {
    const step = definition.byId.get(stepId);
    const started = new Date();
    if (!step || index >= MAX_STEPS_PER_RUN) {
      // Cannot happen with a validated definition; a stored run must still end cleanly.
      status = 'failed';
      break;
    }
    emit({ event: 'step.started', data: { step_id: step.id, step_type: step.step_type, name: step.name } });
    const t0 = performance.now();
    let result: StepResult | null = null;
    let failure: { message: string; output: unknown } | null = null;
    try {
      result = await executeStep(step, ctx);
    } catch (err) {
      failure = { message: err instanceof Error ? err.message : String(err), output: (err as { output?: unknown }).output ?? null };
    }
    if (ctx.resume?.stepId === step.id) ctx.resume = null;
    let next: string | null;
    let stepStatus: string;
    let runStatus: WorkflowRunStatus = 'running';
    let runError: Record<string, unknown> | null = null;
    let runOutput: unknown = undefined;
    if (failure) {
      stepStatus = 'failed';
      next = step.on_failure_step_id;
      if (!next) {
        runStatus = 'failed';
        runError = { code: 'STEP_FAILED', step_id: step.id, message: failure.message };
      }
    } else if (result!.pause) {
      stepStatus = 'needs_input';
      next = step.id;
      runStatus = 'needs_input';
    } else {
      stepStatus = 'completed';
      next = result!.end ? null : result!.next !== undefined ? result!.next : (step.on_success_step_id ?? nextInOrder(step, ctx));
      if (result!.end) runOutput = result!.output;
      if (!next) runStatus = 'completed';
    }
    const stepOutput = failure ? failure.output : result!.pause ? { question: result!.pause.question, ...(result!.output as object) } : result!.output;
    if (runStatus === 'completed' && runOutput === undefined) runOutput = stepOutput;
    const write: StepWrite = {
      index, step, status: stepStatus, input: describeInput(step, vars), output: stepOutput, error: failure?.message ?? null, started,
      latencyMs: performance.now() - t0, next: runStatus === 'completed' || runStatus === 'failed' ? null : next, runStatus, runOutput, runError,
    };
    const completed = await writeStep(deps.sql, target.scope.tenantId, runId, write);
    const entry = toTrace(write, completed);
    trace.push(entry);
    stepsVar[step.id] = { output: stepOutput, status: stepStatus };
    emit({ event: 'step.completed', data: entry });
    index++;
    if (runOutput !== undefined) output = runOutput;
    if (runStatus !== 'running') {
      status = runStatus;
      break;
    }
    stepId = next;
  }
  if (!stepId && status === 'completed' && index === run.stepsDone) {
    // Nothing to run (no trigger): end the run as it stands.
    await deps.sql.query(`update workflow_runs set status = 'completed', completed_at = now(), updated_at = now() where id = $1 and tenant_id = $2 and status = 'running'`, [runId, target.scope.tenantId]);
  }
  if (status === 'failed' && index < MAX_STEPS_PER_RUN && trace.at(-1)?.status !== 'failed') {
    await deps.sql.query(
      `update workflow_runs set status = 'failed', completed_at = now(), updated_at = now(), error = $3::jsonb where id = $1 and tenant_id = $2`,
      [runId, target.scope.tenantId, JSON.stringify({ code: 'RUN_BROKEN', message: 'The run reached a step that does not exist or took too many steps' })],
    );
  }
  return { run_id: runId, conversation_id: run.conversationId, status, output: output ?? null, trace };
}
