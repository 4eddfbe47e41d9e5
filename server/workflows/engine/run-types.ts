// The shapes a workflow run has outside the engine's code: what it runs (RunTarget), where it
// stands as stored (StoredRun), how a waiting step goes on (Resume), the queue of runs a process
// executes itself (LocalRuns, which AppDeps carries), and what an execution streams
// (WorkflowRunEvent; what it answers is the wire type WorkflowRunResult, declared with its schema).
// Types only, so that holding them needs nothing of the engine.
import type { LocalRunQueuePort } from '../../runs/run-ports.js';
import type { TraceStep } from '../../runs/run-steps.js';
import type { TraceEntry } from '../workflows.schemas.js';
import type { TenantScope } from '../../tenants/tenant-scope.js';
import type { StepDef } from '../step-types.js';
import type { StateScope } from '../store/workflow-state.js';

export type WaitKind = 'input' | 'approval' | 'delay' | 'callback';

/** How a waiting step goes on; stored on the run (`resume`) by whatever ended the wait. */
export interface Resume {
  stepId: string;
  kind: WaitKind;
  data: Record<string, unknown>;
}

export interface RunTarget {
  scope: TenantScope;
  workflow: { id: string; key: string };
  steps: StepDef[];
  version: number | null;
  stateScope: StateScope;
}

/** Where a run stands, as stored. */
export interface StoredRun {
  id: string;
  conversationId: string;
  input: Record<string, unknown>;
  nextStepId: string | null;
  stepsDone: number;
  output: unknown;
  /** How the step at nextStepId goes on after a wait (stored with the switch back to running). */
  resume: Resume | null;
  callbackSeq: number;
  callbackKey: string | null;
  /** Async runs: a final run is POSTed there. */
  callbackUrl: string | null;
  /** Step executions so far, loop iterations included (the plan's run_steps counts them). */
  executions: number;
  /** 1, or deeper when another run started this one (an agent's workflow tool). */
  depth: number;
  /**
   * The steps stored so far, when whoever hands the run over holds them (a queued run's trigger,
   * done at intake): executing it then reads none. Absent: read from the database.
   */
  doneSteps?: DoneStep[];
}

/** A stored step as the engine reads it back (run_steps). */
type DoneStep = Pick<TraceStep, 'step_id' | 'type' | 'name' | 'status' | 'input' | 'output' | 'error' | 'started_at' | 'completed_at'>;

/** A run as the intake wrote it: what it runs and where it stands (its trigger step). */
export interface LocalRun {
  target: RunTarget;
  stored: StoredRun;
}

/** The runs a process with a job runner accepted and executes itself (local-runs.ts). */
export type LocalRuns = LocalRunQueuePort<LocalRun>;

export type WorkflowRunEvent =
  | { event: 'run.started'; data: { run_id: string; conversation_id: string; workflow_key: string } }
  | { event: 'step.started'; data: { step_id: string; step_type: string; name: string | null } }
  | { event: 'step.completed'; data: TraceEntry };

