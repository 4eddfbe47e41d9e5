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
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { EntityManager } from '../../../db/orm.js';
import type { AppDeps } from '../../deps.js';
import { isDatabaseUnavailable } from '../../errors.js';
import { jsonSize } from '../../runs/json-size.js';
import { rootLineage, type RunLineage } from '../../runs/run-lineage.js';
import { boundedJson, boundedValue, readRunSteps } from '../../runs/run-steps.js';
import { PROCESS_ID, staleAfterMs } from '../../runs/process-identity.js';
import { LimitExceededError, limitsForPlan, type PlanLimits } from '../../tenants/plan-limits.js';
import type { StepDef } from '../step-types.js';
import { findNextByOrder } from '../validate-definition.js';
import { executeStep, nextInOrder, type StepContext, type StepResult, type StepWait } from './execute-step.js';
import type { RunTarget, StoredRun } from './run-types.js';
import { loadState } from '../store/workflow-state.js';
import { RunCancelledError, RunGuard } from './run-guard.js';
import { renderTemplate } from './templates.js';
import {
  claimRun as claimRunRow, completeEmptyRun, failRun, findRunOutcome, insertRun, writeRunStep, writeRunWait,
  type ClaimedRunRow, type NewRunRow, type StepRowValues, type StoredRunRow,
} from '../store/workflow-runs.js';

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
  /** Set while the run awaits that approval. */
  approval_id?: string;
  /** Set while the run sits in a delay: when it continues. */
  resume_at?: string;
  /** The first run, answered again for a repeated Idempotency-Key. */
  idempotent_replay?: boolean;
}

export const FINAL_STATUSES: readonly WorkflowRunStatus[] = ['completed', 'failed', 'cancelled', 'rejected'];

/** A compiled definition: steps by id and each step's successor by order, built once per version. */
interface Definition {
  byId: Map<string, StepDef>;
  nextOf: Map<string, string | null>;
  trigger: StepDef | null;
  /** Whether any template or expression reads `state` (otherwise saved values need not be loaded). */
  readsState: boolean;
  /** Whether a wait_for_callback step exists (its runs get a callback key). */
  hasCallback: boolean;
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
      hasCallback: steps.some((s) => s.step_type === 'action' && s.action_id === 'wait_for_callback'),
    };
    definitions.set(steps, compiled);
  }
  return compiled;
}

export { compileDefinition };

export const toStoredRun = (row: StoredRunRow): StoredRun => ({
  id: row.id,
  conversationId: row.conversation_id,
  input: row.input,
  nextStepId: row.next_step_id,
  stepsDone: row.steps_done,
  output: row.output,
  resume: row.resume ? { stepId: row.resume.step_id ?? row.resume.stepId, kind: row.resume.kind, data: row.resume.data ?? {} } : null,
  callbackSeq: row.callback_seq,
  callbackKey: row.callback_key,
  callbackUrl: row.callback_url,
  executions: row.executions,
  depth: row.depth,
});

export interface CreateRunOptions {
  /** Chosen beforehand when an idempotency key must name the run before it exists. */
  runId?: string;
  conversationId?: string;
  triggeredBy: string;
  environmentId: string | null;
  callbackUrl?: string | null;
  /** Set when another run starts this one (default 1). */
  depth?: number;
}

/** The run row's values (shared by the sync insert and the queued one). */
export function newRunValues(target: RunTarget, input: Record<string, unknown>, options: CreateRunOptions) {
  const runId = options.runId ?? randomUUID();
  const conversationId = options.conversationId ?? randomUUID();
  const compiled = compileDefinition(target.steps);
  const callbackKey = compiled.hasCallback ? randomBytes(24).toString('base64url') : null;
  const stored: StoredRun = {
    id: runId, conversationId, input, nextStepId: compiled.trigger?.id ?? null, stepsDone: 0, output: null, resume: null,
    callbackSeq: 0, callbackKey, callbackUrl: options.callbackUrl ?? null, executions: 0, depth: options.depth ?? 1,
  };
  const row: NewRunRow = {
    id: runId, tenantId: target.scope.tenantId, workflowId: target.workflow.id, version: target.version, definition: target.version === null ? JSON.stringify(target.steps) : null,
    scope: target.stateScope, conversationId, triggeredBy: options.triggeredBy, input: JSON.stringify(input), nextStepId: stored.nextStepId, environmentId: options.environmentId,
    callbackKey, callbackUrl: stored.callbackUrl, depth: stored.depth,
  };
  return { stored, row };
}

/** Creates the run row, positioned at the trigger step and owned by this process. */
export async function createWorkflowRun(sql: SqlPool, target: RunTarget, input: Record<string, unknown>, options: CreateRunOptions): Promise<StoredRun> {
  const { stored, row } = newRunValues(target, input, options);
  await insertRun(sql, row, PROCESS_ID);
  return stored;
}

/**
 * A run whose process died while executing it is continued this many times at most; then it fails
 * (RUN_CRASHED, retryable by hand) instead of taking down every process that picks it up.
 */
export const MAX_RUN_CRASHES = 2;

/**
 * Takes a running run for this process: one whose owner is this process, nobody, or a process
 * whose heartbeat stopped (it crashed). Null when another live process has it or it is not running.
 */
export async function claimRun(sql: SqlPool, tenantId: string, runId: string, heartbeatMs: number): Promise<ClaimedRunRow | null> {
  return claimRunRow(sql, { tenantId, runId, ownerId: PROCESS_ID, staleAfterSeconds: staleAfterMs(heartbeatMs) / 1000 });
}

// ---- Callback URLs ------------------------------------------------------------------------------

/** The server's public address (webhook and callback URLs). */
export const publicUrl = (config: { PUBLIC_URL?: string; PORT: number }) => (config.PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');

const callbackMac = (key: string, runId: string, seq: number) => createHmac('sha256', key).update(`${runId}:${seq}`).digest('base64url').slice(0, 32);

/** The token of a run's `seq`-th callback wait: run id, seq and a MAC under the run's own key. */
export function callbackToken(runId: string, seq: number, key: string): string {
  return `${Buffer.from(runId.replace(/-/g, ''), 'hex').toString('base64url')}.${seq}.${callbackMac(key, runId, seq)}`;
}

/** The run id and seq a token names (unverified), or null when it is not shaped like one. */
export function parseCallbackToken(token: string): { runId: string; seq: number; mac: string } | null {
  const match = /^([A-Za-z0-9_-]{22})\.(\d{1,6})\.([A-Za-z0-9_-]{32})$/.exec(token);
  if (!match) return null;
  const hex = Buffer.from(match[1], 'base64url').toString('hex');
  if (hex.length !== 32) return null;
  return { runId: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`, seq: Number(match[2]), mac: match[3] };
}

export function verifyCallbackToken(parsed: { runId: string; seq: number; mac: string }, key: string): boolean {
  const expected = Buffer.from(callbackMac(key, parsed.runId, parsed.seq));
  const given = Buffer.from(parsed.mac);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

const callbackUrlOf = (base: string, run: { id: string; callbackKey: string | null }, seq: number) =>
  run.callbackKey ? `${base}/webhooks/workflow-callbacks/${callbackToken(run.id, seq, run.callbackKey)}` : null;

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
  const owned = await writeRunStep(sql, stepRow(tenantId, run.id, w, completed), {
    nextStepId: w.next, status: w.runStatus,
    output: w.runOutput === undefined ? null : JSON.stringify(w.runOutput), error: w.runError === null ? null : JSON.stringify(w.runError),
    queueCallback: run.callbackUrl !== null && FINAL_STATUSES.includes(w.runStatus), ownerId: PROCESS_ID, executions: w.executions,
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
  return renderTemplate(step.config, vars, limits);
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
export async function executeWorkflowRun(
  em: EntityManager,
  deps: AppDeps,
  target: RunTarget,
  run: StoredRun,
  options: { onEvent?: (event: WorkflowRunEvent) => void; lineage?: RunLineage } = {},
): Promise<WorkflowRunResult> {
  const emit = options.onEvent ?? (() => undefined);
  const runId = run.id;
  const tenantId = target.scope.tenantId;
  const definition = compileDefinition(target.steps);
  const done = run.stepsDone > 0 ? await readRunSteps(deps.sql, tenantId, 'workflow', runId) : [];
  const stepsVar: Record<string, { output: unknown; status: string }> = {};
  const trace: TraceEntry[] = done.map((s) => ({
    step_id: s.step_id, step_type: s.type, name: s.name, status: s.status, input: s.input, output: s.output, error: s.error, started_at: s.started_at, completed_at: s.completed_at,
  }));
  // The trigger's row keeps a preview of the input: its output is the input itself.
  for (const s of done) if (s.step_id) stepsVar[s.step_id] = { output: s.type === 'trigger' ? run.input : s.output, status: s.status };
  const limits = limitsForPlan(target.scope.plan, deps.config.PLAN_LIMITS);
  const unbounded = Number.MAX_SAFE_INTEGER;
  // What the run holds already: its input and the values of the steps it stored.
  const stateBytes = done.reduce((sum, s) => sum + jsonSize(s.input, unbounded) + jsonSize(s.output, unbounded), jsonSize(run.input, unbounded));
  const guard = new RunGuard(limits, options.lineage ?? rootLineage(run.depth), { executions: run.executions, stateBytes });
  try {
    return await executeSteps(em, deps, target, run, { emit, definition, stepsVar, trace, guard });
  } finally {
    guard.dispose();
  }
}

async function executeSteps(
  em: EntityManager,
  deps: AppDeps,
  target: RunTarget,
  run: StoredRun,
  parts: { emit: (event: WorkflowRunEvent) => void; definition: Definition; stepsVar: Record<string, { output: unknown; status: string }>; trace: TraceEntry[]; guard: RunGuard },
): Promise<WorkflowRunResult> {
  const { emit, definition, stepsVar, trace, guard } = parts;
  const runId = run.id;
  const tenantId = target.scope.tenantId;
  const stateKey = { tenantId, workflowId: target.workflow.id, scope: target.stateScope };
  const base = publicUrl(deps.config);
  const runVar = { id: runId, conversation_id: run.conversationId, scope: target.stateScope, callback_url: callbackUrlOf(base, run, run.callbackSeq) };
  const vars: Record<string, unknown> = {
    trigger: run.input,
    steps: stepsVar,
    // Saved values are read for templates and expressions only when the definition refers to them.
    state: definition.readsState ? await loadState(deps.sql, stateKey) : {},
    run: runVar,
  };
  emit({ event: 'run.started', data: { run_id: runId, conversation_id: run.conversationId, workflow_key: target.workflow.key } });

  const ctx: StepContext = {
    em, deps, scope: target.scope, workflow: target.workflow, run: { id: runId, conversationId: run.conversationId, scope: target.stateScope },
    state: stateKey, vars, byId: definition.byId, nextOf: definition.nextOf,
    resume: run.resume && run.resume.stepId === run.nextStepId ? run.resume : null,
    stepIndex: run.stepsDone,
    callbackSeq: run.callbackSeq,
    guard,
    lineage: guard.lineage,
  };

  let stepId = run.nextStepId;
  let index = run.stepsDone;
  let status: WorkflowRunStatus = 'completed';
  let output: unknown = run.output;
  let waitInfo: { approval_id?: string; resume_at?: string } = {};
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
    let result: StepResult | null = null;
    let failure: StepFailure | null = null;
    let outputBytes = 0;
    try {
      await guard.beforeStep();
      result = await executeStep(step, ctx);
      // The trigger's output is the run's input: held to run_input_bytes and counted in the state already.
      outputBytes = step.step_type === 'trigger' ? 0 : guard.outputSize(result.output);
      // A step that took the run past its time (or was running when the run above cancelled) ends it here.
      guard.check();
    } catch (err) {
      // The database out of reach is no failure of the step: the run stops where it is stored and
      // is continued from there (the caller hands it over or its job is retried).
      if (isDatabaseUnavailable(err)) throw err;
      // A step that failed because the run was stopped under it (time, cancel) fails for that reason.
      failure = describeFailure(guard.stopReason() ?? err, step.id);
    }
    if (ctx.resume?.stepId === step.id) ctx.resume = null;
    const input = describeStepInput(step, ctx.vars, guard.limits);
    let stepOutput = failure ? boundedValue(failure.output) : result!.output;
    if (!failure) {
      try {
        // Everything a run stores counts against its state: this step's values too.
        guard.addState(outputBytes + jsonSize(input, Number.MAX_SAFE_INTEGER));
      } catch (err) {
        failure = describeFailure(err, step.id);
        stepOutput = boundedValue(stepOutput);
      }
    }
    let next: string | null;
    let stepStatus: string;
    let runStatus: WorkflowRunStatus = 'running';
    let runError: Record<string, unknown> | null = null;
    let runOutput: unknown = undefined;
    if (failure) {
      stepStatus = 'failed';
      next = failure.fatal ? null : step.on_failure_step_id;
      if (!next) {
        runStatus = failure.cancelled ? 'cancelled' : 'failed';
        runError = failure.error;
      }
    } else if (result!.wait) {
      runStatus = WAIT_STATUS[result!.wait.kind];
      stepStatus = runStatus;
      next = step.id;
    } else {
      stepStatus = 'completed';
      next = result!.end ? null : result!.next !== undefined ? result!.next : (step.on_success_step_id ?? nextInOrder(step, ctx));
      if (result!.end) runOutput = result!.output;
      if (result!.endStatus) {
        runStatus = result!.endStatus;
        next = null;
      } else if (!next) runStatus = 'completed';
    }
    if (runStatus === 'completed' && runOutput === undefined) runOutput = stepOutput;
    const write: StepWrite = {
      index, step, status: stepStatus, input, output: stepOutput, error: failure?.message ?? null, started,
      latencyMs: performance.now() - t0, next: FINAL_STATUSES.includes(runStatus) ? null : next, runStatus, runOutput, runError, executions: guard.executions,
    };
    let completed: Date | null;
    if (result?.wait && !failure) {
      const written = await writeWait(deps.sql, tenantId, run, write, result.wait, ctx.callbackSeq);
      if (!written.owned) return takenOver(deps.sql, tenantId, runId, trace);
      if (!written.waited) {
        // A callback arrived between the step's check and the wait: run the step again to take it.
        if (++retriesOfWait > 3) throw new Error('the run could not settle its wait');
        continue;
      }
      completed = written.completed;
      if (result.wait.approvalId) waitInfo = { approval_id: result.wait.approvalId };
      if (result.wait.kind === 'delay' && result.wait.wakeAt) waitInfo = { resume_at: result.wait.wakeAt.toISOString() };
    } else {
      completed = await writeStep(deps.sql, tenantId, run, write);
      if (!completed) return takenOver(deps.sql, tenantId, runId, trace);
    }
    const entry = toTrace(write, completed);
    trace.push(entry);
    stepsVar[step.id] = { output: stepOutput, status: stepStatus };
    emit({ event: 'step.completed', data: entry });
    index++;
    if (ctx.callbackSeq !== run.callbackSeq) {
      // A callback wait finished: the next one has its own address.
      run.callbackSeq = ctx.callbackSeq;
      runVar.callback_url = callbackUrlOf(base, run, run.callbackSeq);
    }
    if (runOutput !== undefined) output = runOutput;
    if (runStatus !== 'running') {
      status = runStatus;
      break;
    }
    stepId = next;
  }
  if (!stepId && status === 'completed' && index === run.stepsDone) {
    // Nothing to run (no trigger): end the run as it stands.
    await completeEmptyRun(deps.sql, tenantId, runId);
  }
  if (status === 'failed' && trace.at(-1)?.status !== 'failed') {
    await failRun(deps.sql, tenantId, runId, { code: 'RUN_BROKEN', message: 'The run reached a step that does not exist' });
  }
  return { run_id: runId, conversation_id: run.conversationId, status, output: output ?? null, trace, ...waitInfo };
}
