// What one execution of a workflow run may take, checked while it runs: step executions (loop
// bodies and nested loops included, across the run's whole life), the size of each step's output
// and of everything the run has stored, its time and its cancellation. The engine asks before each
// step and after it; a loop asks before each iteration. Long work also yields to the event loop
// here, so a run of many quick steps never holds the process for other requests.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { jsonSize } from '../../runs/json-size.js';
import type { RunLineage } from '../../runs/run-lineage.js';
import { LimitExceededError, type PlanLimits } from '../../tenants/plan-limits.js';

/** Synchronous work between two yields to the event loop, at most (so health probes and other requests wait less than this). */
export const YIELD_AFTER_MS = 10;

/** The run above (an agent's tool call) gave up on this run, or it was cancelled: it ends `cancelled`. */
export class RunCancelledError extends Error {
  readonly code = 'RUN_CANCELLED';
  constructor(message: string) {
    super(message);
    this.name = 'RunCancelledError';
  }
}

export interface GuardStart {
  /** Step executions the run made before this execution (stored on the run). */
  executions: number;
  /** Bytes the run has stored before this execution: its input and its steps' values. */
  stateBytes: number;
}

export class RunGuard {
  executions: number;
  stateBytes: number;
  /** When this execution must end (epoch ms): the plan's run_wall_seconds from now, or the run above's deadline when sooner. */
  readonly deadline: number;
  /** Aborted when the time is up or the run above cancels: steps that wait on the network take it. */
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private lastYield = performance.now();

  constructor(
    readonly limits: PlanLimits,
    readonly lineage: RunLineage,
    start: GuardStart,
  ) {
    this.executions = start.executions;
    this.stateBytes = start.stateBytes;
    const own = Date.now() + limits.run_wall_seconds * 1000;
    this.deadline = lineage.deadline === null ? own : Math.min(own, lineage.deadline);
    this.timer = setTimeout(() => this.controller.abort(this.timeout()), Math.max(0, this.deadline - Date.now()));
    this.timer.unref();
    const parent = lineage.signal;
    if (parent) {
      const follow = () => this.controller.abort(parent.reason);
      if (parent.aborted) follow();
      else {
        parent.addEventListener('abort', follow, { once: true });
        this.detach = () => parent.removeEventListener('abort', follow);
      }
    }
    this.signal = this.controller.signal;
  }

  /** Stops following the run above (set while it is followed). */
  private detach: (() => void) | null = null;

  private timeout(): LimitExceededError {
    return new LimitExceededError(
      'run_wall_seconds',
      this.limits.run_wall_seconds,
      `the run executed for longer than its time limit (${this.limits.run_wall_seconds} s without waiting${this.lineage.deadline !== null && this.lineage.deadline <= this.deadline ? ', or the run that started it ran out of time' : ''})`,
      true,
    );
  }

  /** Why the run must stop now (its time is up: RUN_TIMEOUT; the run above cancelled it), or null. */
  stopReason(): LimitExceededError | RunCancelledError | null {
    if (!this.signal.aborted && Date.now() < this.deadline) return null;
    const reason: unknown = this.signal.reason;
    if (reason instanceof LimitExceededError || reason instanceof RunCancelledError) return reason;
    if (Date.now() >= this.deadline) return this.timeout();
    return new RunCancelledError(`the run that started this one stopped it${reason instanceof Error ? ` (${reason.message})` : ''}`);
  }

  /** Throws {@link stopReason} when there is one. */
  check(): void {
    const reason = this.stopReason();
    if (reason) throw reason;
  }

  /** Before each step execution, loop iterations included: counts it (STEP_LIMIT_EXCEEDED), checks time and cancellation, yields when due. */
  async beforeStep(): Promise<void> {
    this.check();
    if (++this.executions > this.limits.run_steps) {
      throw new LimitExceededError('run_steps', this.limits.run_steps, `the run reached its limit of ${this.limits.run_steps} step executions (loop iterations count, nested loops too)`, true);
    }
    if (performance.now() - this.lastYield >= YIELD_AFTER_MS) {
      await nextTurn();
      this.lastYield = performance.now();
      this.check();
    }
  }

  /** The JSON size of a step's output, or OUTPUT_TOO_LARGE (the step fails) when it passes the plan's step_output_bytes. */
  outputSize(value: unknown, what = 'the step output'): number {
    const max = this.limits.step_output_bytes;
    const size = jsonSize(value, max);
    if (size > max) throw new LimitExceededError('step_output_bytes', max, `${what} is larger than the ${max} bytes a step may output`);
    return size;
  }

  /** Counts bytes the run stores (a step's values): RUN_STATE_TOO_LARGE ends the run past run_state_bytes. */
  addState(bytes: number): void {
    this.stateBytes += bytes;
    const max = this.limits.run_state_bytes;
    if (this.stateBytes > max) {
      throw new LimitExceededError('run_state_bytes', max, `the run's stored input and step values passed the ${max} bytes a run may hold`, true);
    }
  }

  /** The execution ended: its timer and its link to the run above go (nothing is aborted: nothing of it still runs). */
  dispose(): void {
    clearTimeout(this.timer);
    this.detach?.();
    this.detach = null;
  }
}
