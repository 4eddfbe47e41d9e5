// The step engine. A run is a row; the loop reads where it stands (the steps already done and the
// next step's id), runs one step, and writes that step's result together with the new position in
// one statement before the next step starts. So a run stopped anywhere (a wait, a crash) continues
// from what is stored, in any process. Sync runs, streams, test runs and jobs share it.
//
// Waits (input, approval, delay, callback) end an execution: the waiting step's row, the run's wait
// and the job that wakes it are written in one statement. Whatever ends the wait (an answer, a
// decision, a timer, a callback) stores how the step goes on in `resume` together with the switch
// back to running; the step then runs again and reads it.
import type { WorkflowRunStatus } from '../../../db/column-values.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { EntityManager } from '../../../db/orm.js';
import type { AppDeps } from '../../deps.js';
import { isDatabaseUnavailable } from '../../errors.js';
import { jsonSize } from '../../runs/json-size.js';
import { rootLineage, type RunLineage } from '../../runs/run-lineage.js';
import { boundedJson, boundedValue, readRunSteps } from '../../runs/run-steps.js';
import { PROCESS_ID } from '../../runs/process-identity.js';
import { LimitExceededError, limitsForPlan, type PlanLimits } from '../../tenants/plan-limits.js';
import type { StepDef } from '../step-types.js';
import { maskStepSecrets } from '../step-secrets.js';
import { countedInputSize } from '../input-size.js';
import { executeStep, nextInOrder, type StepContext, type StepResult, type StepWait } from './execute-step.js';
import { buildCallbackUrl, publicUrl } from './callback-tokens.js';
import { observeRun, observeStep, traceContextToSave } from '../../observability/telemetry.js';
import type { TraceEntry, WorkflowRunResult } from '../workflows.schemas.js';
import type { RunTarget, StoredRun, WorkflowRunEvent } from './run-types.js';
import { loadState } from '../store/workflow-state.js';
import { RunCancelledError, RunGuard } from './run-guard.js';
import { storeRunStep } from './step-writes.js';
import { renderTemplate } from '../../common/templates.js';
import { compileDefinition, type Definition } from './run-start.js';
import { findRunOutcome } from '../store/run-reads.js';
import { completeEmptyRun, failRun, writeRunWait, type StepRowValues } from '../store/run-step-writes.js';

export const FINAL_STATUSES: readonly WorkflowRunStatus[] = ['completed', 'failed', 'cancelled', 'rejected'];

/**
 * A run whose process died while executing it is continued this many times at most; then it fails
 * (RUN_CRASHED, retryable by hand) instead of taking down every process that picks it up.
 */
export const MAX_RUN_CRASHES = 2;

// ---- Step writes --------------------------------------------------------------------------------

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
  /** The run's step executions so far (stored with the step). */
  executions: number;
}

// A step's output is stored whole (the run's limits bound it), so a run continued in another
// process reads exactly what the step gave; its input is only shown, as a preview when large. The
// trigger's output is the run's input, stored on the run: its row keeps a preview.
const stepRow = (tenantId: string, runId: string, w: StepWrite, completed: Date): StepRowValues => ({
  tenantId, runId, index: w.index, type: w.step.step_type, name: (w.step.name ?? w.step.id).slice(0, 200), stepId: w.step.id, status: w.status, input: boundedJson(w.input),
  output: w.step.step_type === 'trigger' ? boundedJson(w.output) : JSON.stringify(w.output ?? null),
  latencyMs: Math.round(w.latencyMs), error: w.error?.slice(0, 4000) ?? null, startedAt: w.started, completedAt: completed,
});

/** Writes a step; null when this process no longer owns the run (nothing written). */
async function writeStep(sql: SqlPool, tenantId: string, run: StoredRun, w: StepWrite): Promise<Date | null> {
  const completed = new Date();
  const queueCallback = run.callbackUrl !== null && FINAL_STATUSES.includes(w.runStatus);
  // The callback is sent later, maybe by another process: it continues the run's trace from here.
  const traceContext = queueCallback ? traceContextToSave() : null;
  const owned = await storeRunStep(sql, stepRow(tenantId, run.id, w, completed), {
    nextStepId: w.next, status: w.runStatus,
    output: w.runOutput === undefined ? null : JSON.stringify(w.runOutput), error: w.runError === null ? null : JSON.stringify(w.runError),
    queueCallback, traceContext: traceContext && JSON.stringify(traceContext), ownerId: PROCESS_ID, executions: w.executions,
  });
  return owned ? completed : null;
}

const WAIT_STATUS: Record<StepWait['kind'], WorkflowRunStatus> = { input: 'needs_input', approval: 'awaiting_approval', delay: 'waiting', callback: 'waiting' };

/** Writes a wait; not `waited` when a callback arrived first or the run is no longer this process's (nothing written). */
async function writeWait(sql: SqlPool, tenantId: string, run: StoredRun, w: StepWrite, wait: StepWait, callbackSeq: number): Promise<{ completed: Date; waited: boolean; owned: boolean }> {
  const completed = new Date();
  const written = await writeRunWait(sql, stepRow(tenantId, run.id, w, completed), {
    nextStepId: w.step.id, status: w.runStatus, kind: wait.kind, approvalId: wait.approvalId ?? null, resumeAt: wait.kind === 'delay' ? wait.wakeAt ?? null : null,
    approvalStepId: wait.approvalStepId ?? w.step.id, loopIndex: wait.loopIndex ?? null, message: wait.message ?? null, approvalExpiresAt: wait.kind === 'approval' ? wait.wakeAt ?? null : null,
    callbackSeq, wakeAt: wait.wakeAt ?? null, ownerId: PROCESS_ID, executions: w.executions,
  });
  return { completed, ...written };
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
function describeInput(step: StepDef, vars: Record<string, unknown>, limits: PlanLimits): unknown {
  if (step.step_type === 'trigger') return null;
  if (step.step_type === 'condition' || step.step_type === 'switch' || step.step_type === 'loop') return step.config;
  // A stored run step shows an http_request's credentials masked.
  return renderTemplate(maskStepSecrets(step).config, vars, limits);
}

/**
 * This process lost the run (it was paused past its heartbeat and another process continued it):
 * it stops and answers the run as stored, with the steps it saw.
 */
async function takenOver(sql: SqlPool, tenantId: string, runId: string, trace: TraceEntry[]): Promise<WorkflowRunResult> {
  const row = await findRunOutcome(sql, tenantId, runId);
  return { run_id: runId, conversation_id: row.conversation_id, status: row.status, output: row.output ?? null, trace };
}

/** Why a step failed, and whether the failure ends the whole run (a limit of the run, a cancel). */
interface StepFailure {
  message: string;
  output: unknown;
  /** The run's stored error when the failure is not handled by on_failure (or cannot be). */
  error: Record<string, unknown>;
  /** Ends the run at once, whatever on_failure says: the run itself ran out of steps, time or room, or was cancelled. */
  fatal: boolean;
  cancelled: boolean;
}

function describeFailure(err: unknown, stepId: string): StepFailure {
  const message = err instanceof Error ? err.message : String(err);
  const output = (err as { output?: unknown } | null)?.output ?? null;
  if (err instanceof LimitExceededError) return { message, output, error: { ...err.toDetails(), step_id: stepId }, fatal: err.fatal, cancelled: false };
  if (err instanceof RunCancelledError) return { message, output, error: { code: err.code, message, step_id: stepId }, fatal: true, cancelled: true };
  return { message, output, error: { code: 'STEP_FAILED', step_id: stepId, message }, fatal: false, cancelled: false };
}

/** What a step was given, for the trace, within the size a stored step value keeps. */
function describeStepInput(step: StepDef, vars: Record<string, unknown>, limits: PlanLimits): unknown {
  try {
    return boundedValue(describeInput(step, vars, limits));
  } catch (err) {
    // The step itself failed on the same templates (a size limit): its error says why.
    return { unavailable: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Runs from the run's stored position until it ends or waits. The caller owns the run (created it,
 * or claimed it); a stored `resume` continues the step the run waited at. Every step is checked
 * against the tenant plan's limits while it runs (run-guard.ts); a run started by another run
 * (an agent's workflow tool) gets that run's lineage: its depth, cost budget, deadline and cancel.
 */
export function executeWorkflowRun(
  em: EntityManager,
  deps: AppDeps,
  target: RunTarget,
  run: StoredRun,
  options: { onEvent?: (event: WorkflowRunEvent) => void; lineage?: RunLineage } = {},
): Promise<WorkflowRunResult> {
  return observeRun(
    { kind: 'workflow', tenantId: target.scope.tenantId, runId: run.id, name: target.workflow.key },
    () => executeWorkflowRunNow(em, deps, target, run, options),
    (result) => result.status,
  );
}

async function executeWorkflowRunNow(
  em: EntityManager,
  deps: AppDeps,
  target: RunTarget,
  run: StoredRun,
  options: { onEvent?: (event: WorkflowRunEvent) => void; lineage?: RunLineage },
): Promise<WorkflowRunResult> {
  const emit = options.onEvent ?? (() => undefined);
  const runId = run.id;
  const tenantId = target.scope.tenantId;
  const definition = compileDefinition(target.steps);
  const done = run.stepsDone > 0 ? (run.doneSteps ?? (await readRunSteps(deps.sql, tenantId, 'workflow', runId))) : [];
  run.doneSteps = undefined;
  const stepsVar: Record<string, { output: unknown; status: string }> = {};
  const trace: TraceEntry[] = done.map((s) => ({
    step_id: s.step_id, step_type: s.type, name: s.name, status: s.status, input: s.input, output: s.output, error: s.error, started_at: s.started_at, completed_at: s.completed_at,
  }));
  // The trigger's row keeps a preview of the input: its output is the input itself.
  for (const s of done) if (s.step_id) stepsVar[s.step_id] = { output: s.type === 'trigger' ? run.input : s.output, status: s.status };
  const limits = limitsForPlan(target.scope.plan, deps.config.PLAN_LIMITS);
  const unbounded = Number.MAX_SAFE_INTEGER;
  // What the run holds already: its input (its attachments' text has its own bound) and the values
  // of the steps it stored (a trigger's output is the input, counted once, as when the trigger runs
  // in this execution).
  const stateBytes = done.reduce((sum, s) => sum + jsonSize(s.input, unbounded) + (s.type === 'trigger' ? 0 : jsonSize(s.output, unbounded)), countedInputSize(run.input, unbounded));
  const guard = new RunGuard(limits, options.lineage ?? rootLineage(run.depth), { executions: run.executions, stateBytes });
  try {
    return await executeSteps(em, deps, target, run, { emit, definition, stepsVar, trace, guard });
  } finally {
    guard.dispose();
  }
}

/** What an execution holds besides the run: events out, the compiled steps, and what the steps so far gave. */
interface RunParts {
  emit: (event: WorkflowRunEvent) => void;
  definition: Definition;
  stepsVar: Record<string, { output: unknown; status: string }>;
  trace: TraceEntry[];
  guard: RunGuard;
}

/** The run's own variables (`run.*` in templates); callback_url changes when a callback wait ends. */
interface RunVar {
  id: string;
  conversation_id: string;
  scope: RunTarget['stateScope'];
  callback_url: string | null;
}

async function executeSteps(em: EntityManager, deps: AppDeps, target: RunTarget, run: StoredRun, parts: RunParts): Promise<WorkflowRunResult> {
  const { emit, definition, trace, guard } = parts;
  const runId = run.id;
  const tenantId = target.scope.tenantId;
  const base = publicUrl(deps.config);
  const { ctx, runVar } = await createStepContext(em, deps, target, run, parts, base);
  emit({ event: 'run.started', data: { run_id: runId, conversation_id: run.conversationId, workflow_key: target.workflow.key } });

  let stepId = run.nextStepId;
  let index = run.stepsDone;
  let status: WorkflowRunStatus = 'completed';
  let output: unknown = run.output;
  let waitInfo: WaitInfo = {};
  let retriesOfWait = 0;
  while (stepId) {
    const step = definition.byId.get(stepId);
    const started = new Date();
    if (!step) {
      // Cannot happen with a validated definition; a stored run must still end cleanly.
      status = 'failed';
      break;
    }
    emit({ event: 'step.started', data: { step_id: step.id, step_type: step.step_type, name: step.name } });
    const t0 = performance.now();
    ctx.stepIndex = index;
    const attempt = await attemptStep(step, ctx, guard);
    const outcome = decideStepOutcome(step, ctx, attempt);
    const write: StepWrite = {
      index, step, status: outcome.stepStatus, input: attempt.input, output: attempt.output, error: attempt.failure?.message ?? null, started,
      latencyMs: performance.now() - t0, next: FINAL_STATUSES.includes(outcome.runStatus) ? null : outcome.next, runStatus: outcome.runStatus,
      runOutput: outcome.runOutput, runError: outcome.runError, executions: guard.executions,
    };
    const stored = await storeStep(deps.sql, tenantId, run, write, attempt.failure ? null : (attempt.result.wait ?? null), ctx.callbackSeq);
    if (stored.kind === 'taken_over') return takenOver(deps.sql, tenantId, runId, trace);
    if (stored.kind === 'wait_missed') {
      // A callback arrived between the step's check and the wait: run the step again to take it.
      if (++retriesOfWait > 3) throw new Error('the run could not settle its wait');
      continue;
    }
    if (stored.waitInfo) waitInfo = stored.waitInfo;
    publishStep(write, stored.completed, parts);
    index++;
    refreshCallbackUrl(run, ctx.callbackSeq, runVar, base);
    if (outcome.runOutput !== undefined) output = outcome.runOutput;
    if (outcome.runStatus !== 'running') {
      status = outcome.runStatus;
      break;
    }
    stepId = outcome.next;
  }
  await settleRunEnd(deps.sql, tenantId, run, { stepId, status, index, trace });
  return { run_id: runId, conversation_id: run.conversationId, status, output: output ?? null, trace, ...waitInfo };
}

/** The context every step of this execution reads: the variables its templates see and where the run stands. */
async function createStepContext(em: EntityManager, deps: AppDeps, target: RunTarget, run: StoredRun, parts: RunParts, base: string): Promise<{ ctx: StepContext; runVar: RunVar }> {
  const { definition, stepsVar, guard } = parts;
  const stateKey = { tenantId: target.scope.tenantId, workflowId: target.workflow.id, scope: target.stateScope };
  const runVar: RunVar = { id: run.id, conversation_id: run.conversationId, scope: target.stateScope, callback_url: buildCallbackUrl(base, run, run.callbackSeq) };
  const vars: Record<string, unknown> = {
    trigger: run.input,
    steps: stepsVar,
    // Saved values are read for templates and expressions only when the definition refers to them.
    state: definition.readsState ? await loadState(deps.sql, stateKey) : {},
    run: runVar,
  };
  const ctx: StepContext = {
    em, deps, scope: target.scope, workflow: target.workflow, run: { id: run.id, conversationId: run.conversationId, scope: target.stateScope },
    state: stateKey, vars, byId: definition.byId, nextOf: definition.nextOf,
    resume: run.resume && run.resume.stepId === run.nextStepId ? run.resume : null,
    stepIndex: run.stepsDone,
    callbackSeq: run.callbackSeq,
    guard,
    lineage: guard.lineage,
  };
  return { ctx, runVar };
}

/** A step as run: its result, or why it failed; and the input and output its row stores. */
type StepAttempt =
  | { result: StepResult; failure: null; input: unknown; output: unknown }
  | { result: StepResult | null; failure: StepFailure; input: unknown; output: unknown };

/** Runs one step and counts what it stores against the run's state; the wait it answered is done with. */
async function attemptStep(step: StepDef, ctx: StepContext, guard: RunGuard): Promise<StepAttempt> {
  const ran = await runGuardedStep(step, ctx, guard);
  if (ctx.resume?.stepId === step.id) ctx.resume = null;
  const input = describeStepInput(step, ctx.vars, guard.limits);
  return chargeStepState(step, guard, ran, input);
}

type GuardedRun = { result: StepResult; failure: null; outputBytes: number } | { result: null; failure: StepFailure; outputBytes: 0 };

/** Runs the step within the plan's limits: its result, or why it failed (the database out of reach is thrown). */
async function runGuardedStep(step: StepDef, ctx: StepContext, guard: RunGuard): Promise<GuardedRun> {
  try {
    await guard.beforeStep();
    const result = await observeStep(`workflow step ${step.step_type}`, { 'liya.step.id': step.id, 'liya.step.type': step.step_type, 'liya.step.action': step.action_id ?? undefined }, async (span) => {
      const stepResult = await executeStep(step, ctx);
      span.setAttributes({ 'liya.step.status': stepResult.wait ? 'waiting' : 'completed' });
      return stepResult;
    });
    // The trigger's output is the run's input: held to run_input_bytes and counted in the state already.
    const outputBytes = step.step_type === 'trigger' ? 0 : guard.outputSize(result.output);
    // A step that took the run past its time (or was running when the run above cancelled) ends it here.
    guard.check();
    return { result, failure: null, outputBytes };
  } catch (err) {
    // The database out of reach is no failure of the step: the run stops where it is stored and
    // is continued from there (the caller hands it over or its job is retried).
    if (isDatabaseUnavailable(err)) throw err;
    // A step that failed because the run was stopped under it (time, cancel) fails for that reason.
    return { result: null, failure: describeFailure(guard.stopReason() ?? err, step.id), outputBytes: 0 };
  }
}

/** Everything a run stores counts against its state, this step's values too: past its room the step fails. */
function chargeStepState(step: StepDef, guard: RunGuard, ran: GuardedRun, input: unknown): StepAttempt {
  if (ran.failure) return { result: null, failure: ran.failure, input, output: boundedValue(ran.failure.output) };
  try {
    guard.addState(ran.outputBytes + jsonSize(input, Number.MAX_SAFE_INTEGER));
    return { result: ran.result, failure: null, input, output: ran.result.output };
  } catch (err) {
    return { result: ran.result, failure: describeFailure(err, step.id), input, output: boundedValue(ran.result.output) };
  }
}

/** Where the run goes after a step. */
interface StepOutcome {
  stepStatus: string;
  next: string | null;
  /** 'running' while the run goes on. */
  runStatus: WorkflowRunStatus;
  runError: Record<string, unknown> | null;
  /** The run's output when this step ends it (undefined: unchanged). */
  runOutput: unknown;
}

/** The step's status, the next step, and whether (and how) the run ends: by failure, a wait, or the step's own answer. */
function decideStepOutcome(step: StepDef, ctx: StepContext, attempt: StepAttempt): StepOutcome {
  let next: string | null;
  let stepStatus: string;
  let runStatus: WorkflowRunStatus = 'running';
  let runError: Record<string, unknown> | null = null;
  let runOutput: unknown = undefined;
  if (attempt.failure) {
    const failure = attempt.failure;
    stepStatus = 'failed';
    next = failure.fatal ? null : step.on_failure_step_id;
    if (!next) {
      runStatus = failure.cancelled ? 'cancelled' : 'failed';
      runError = failure.error;
    }
  } else if (attempt.result.wait) {
    runStatus = WAIT_STATUS[attempt.result.wait.kind];
    stepStatus = runStatus;
    next = step.id;
  } else {
    const result = attempt.result;
    stepStatus = 'completed';
    next = result.end ? null : result.next !== undefined ? result.next : (step.on_success_step_id ?? nextInOrder(step, ctx));
    if (result.end) runOutput = result.output;
    if (result.endStatus) {
      runStatus = result.endStatus;
      next = null;
    } else if (!next) runStatus = 'completed';
  }
  if (runStatus === 'completed' && runOutput === undefined) runOutput = attempt.output;
  return { stepStatus, next, runStatus, runError, runOutput };
}

/** What the run's answer says about the wait it stopped at. */
type WaitInfo = { approval_id?: string; resume_at?: string };

type StoredStep = { kind: 'stored'; completed: Date; waitInfo?: WaitInfo } | { kind: 'taken_over' } | { kind: 'wait_missed' };

/**
 * Stores the step with the run's new position (a waiting step together with its wait). Nothing is
 * written when this process no longer owns the run (`taken_over`) or a callback arrived before the
 * wait could be written (`wait_missed`).
 */
async function storeStep(sql: SqlPool, tenantId: string, run: StoredRun, write: StepWrite, wait: StepWait | null, callbackSeq: number): Promise<StoredStep> {
  if (!wait) {
    const completed = await writeStep(sql, tenantId, run, write);
    return completed ? { kind: 'stored', completed } : { kind: 'taken_over' };
  }
  const written = await writeWait(sql, tenantId, run, write, wait, callbackSeq);
  if (!written.owned) return { kind: 'taken_over' };
  if (!written.waited) return { kind: 'wait_missed' };
  const waitInfo = wait.kind === 'delay' && wait.wakeAt ? { resume_at: wait.wakeAt.toISOString() } : wait.approvalId ? { approval_id: wait.approvalId } : undefined;
  return { kind: 'stored', completed: written.completed, waitInfo };
}

/** Shows a stored step: on the trace, to the later steps' templates (`steps`), and as an event. */
function publishStep(write: StepWrite, completed: Date, parts: RunParts): void {
  const entry = toTrace(write, completed);
  parts.trace.push(entry);
  parts.stepsVar[write.step.id] = { output: write.output, status: write.status };
  parts.emit({ event: 'step.completed', data: entry });
}

/** A callback wait finished: the next one has its own address. */
function refreshCallbackUrl(run: StoredRun, callbackSeq: number, runVar: RunVar, base: string): void {
  if (callbackSeq === run.callbackSeq) return;
  run.callbackSeq = callbackSeq;
  runVar.callback_url = buildCallbackUrl(base, run, run.callbackSeq);
}

/** Ends what the loop leaves open: a run with nothing to run completes; one that reached a missing step fails. */
async function settleRunEnd(sql: SqlPool, tenantId: string, run: StoredRun, end: { stepId: string | null; status: WorkflowRunStatus; index: number; trace: TraceEntry[] }): Promise<void> {
  if (!end.stepId && end.status === 'completed' && end.index === run.stepsDone) {
    // Nothing to run (no trigger): end the run as it stands.
    await completeEmptyRun(sql, tenantId, run.id);
  }
  if (end.status === 'failed' && end.trace.at(-1)?.status !== 'failed') {
    await failRun(sql, tenantId, run.id, { code: 'RUN_BROKEN', message: 'The run reached a step that does not exist' });
  }
}
