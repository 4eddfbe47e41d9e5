// A run's start: the compiled definition it runs, its row's values, the trigger step done at
// intake (queued runs store it with the run), creating a sync run owned by this process, and
// claiming a running run for this process (a job, a recovery). The engine (run-workflow.ts)
// executes what these hand it.
import { randomBytes, randomUUID } from 'node:crypto';
import type { SqlPool } from '../../../db/sql-pool.js';
import { jsonSize } from '../../runs/json-size.js';
import { boundedValue } from '../../runs/run-steps.js';
import { PROCESS_ID, staleAfterMs } from '../../runs/process-identity.js';
import type { PlanLimits } from '../../tenants/plan-limits.js';
import type { StepDef } from '../step-types.js';
import { findNextByOrder } from '../validate-definition.js';
import { countedInputSize } from '../input-size.js';
import { nextInOrder } from './execute-step.js';
import type { RunTarget, StoredRun } from './run-types.js';
import { claimRun as claimRunRow, insertRun, type ClaimedRunRow, type IntakeStepValues, type NewRunRow } from '../store/run-intake.js';
import type { StoredRunRow } from '../store/run-rows.js';

/** A compiled definition: steps by id and each step's successor by order, built once per version. */
export interface Definition {
  byId: Map<string, StepDef>;
  nextOf: Map<string, string | null>;
  trigger: StepDef | null;
  /** Whether any template or expression reads `state` (otherwise saved values need not be loaded). */
  readsState: boolean;
  /** Whether a wait_for_callback step exists (its runs get a callback key). */
  hasCallback: boolean;
}

const definitions = new WeakMap<StepDef[], Definition>();

export function compileDefinition(steps: StepDef[]): Definition {
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

/**
 * A queued run's trigger step, done at intake so it is stored with the run (one statement, one
 * commit, instead of a step write of its own). A trigger step gives the run's input and nothing else
 * can happen in it: this does what executing it does (one step execution counted, the input
 * counted in the run's state, the next step by on_success or order) and positions `stored` after
 * it. Null, leaving the trigger to the engine, when the run does not start at a trigger with a
 * successor or the plan's limits would stop the step (the engine then fails it as it fails any).
 */
export function completeTriggerAtIntake(target: RunTarget, stored: StoredRun, limits: PlanLimits): IntakeStepValues | null {
  const definition = compileDefinition(target.steps);
  const trigger = definition.trigger;
  if (!trigger || stored.nextStepId !== trigger.id || stored.stepsDone !== 0 || stored.executions !== 0) return null;
  const next = trigger.on_success_step_id ?? nextInOrder(trigger, definition);
  if (!next || !definition.byId.has(next)) return null;
  if (limits.run_steps < 1 || countedInputSize(stored.input, Number.MAX_SAFE_INTEGER) + jsonSize(null, Number.MAX_SAFE_INTEGER) > limits.run_state_bytes) return null;
  const at = new Date();
  const name = (trigger.name ?? trigger.id).slice(0, 200);
  const output = boundedValue(stored.input);
  stored.nextStepId = next;
  stored.stepsDone = 1;
  stored.executions = 1;
  stored.doneSteps = [{
    step_id: trigger.id, type: trigger.step_type, name, status: 'completed', input: null, output, error: null, started_at: at.toISOString(), completed_at: at.toISOString(),
  }];
  return { type: trigger.step_type, name, stepId: trigger.id, input: 'null', output: JSON.stringify(output), startedAt: at, completedAt: at };
}

/** Creates the run row, positioned at the trigger step and owned by this process. */
export async function createWorkflowRun(sql: SqlPool, target: RunTarget, input: Record<string, unknown>, options: CreateRunOptions): Promise<StoredRun> {
  const { stored, row } = newRunValues(target, input, options);
  await insertRun(sql, row, PROCESS_ID);
  return stored;
}

/**
 * Takes a running run for this process: one whose owner is this process, nobody, or a process
 * whose heartbeat stopped (it crashed). Null when another live process has it or it is not running.
 */
export async function claimRun(sql: SqlPool, tenantId: string, runId: string, heartbeatMs: number): Promise<ClaimedRunRow | null> {
  return claimRunRow(sql, { tenantId, runId, ownerId: PROCESS_ID, staleAfterSeconds: staleAfterMs(heartbeatMs) / 1000 });
}
