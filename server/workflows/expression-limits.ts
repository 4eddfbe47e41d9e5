// Keeps one CEL evaluation within its plan's limits: a deadline (expression_ms) and a cap on every
// value it builds (expression_result_size: characters of a string, elements of a list, entries of a
// map), checked before the value is built so memory never grows past it. meter-cel-tree.ts wraps
// the nodes of a compiled expression that copy, build or run long; they report to the meter here.
//
// Time is metered instead of interrupted: wrapped nodes add the work they do (elements copied or
// compared, characters scanned, nodes of a macro body run) to a counter, and the clock is read
// only every CHECK_EVERY units (well under a millisecond of work), so a simple expression never
// reads it. Two things cannot be metered from outside: a regular expression (`matches`) backtracks
// inside V8, and a comparison of two large nested values walks them inside cel-js. Those run under
// a vm watchdog, which interrupts synchronous code but starts a thread per call (~150 µs), so only
// expressions using `matches`, and only comparisons of large nested values, pay it.
import vm from 'node:vm';
import { DEFAULT_PLAN_LIMITS, LimitExceededError, type PlanLimits } from '../tenants/plan-limits.js';

/** The plan limits one evaluation runs under; a tenant's {@link PlanLimits} fits as it is. */
export type ExpressionLimits = Pick<PlanLimits, 'expression_ms' | 'expression_result_size'>;

/** The trial plan's limits: what an evaluation gets when its caller passes none. */
export const DEFAULT_EXPRESSION_LIMITS: Readonly<ExpressionLimits> = {
  expression_ms: DEFAULT_PLAN_LIMITS.trial.expression_ms,
  expression_result_size: DEFAULT_PLAN_LIMITS.trial.expression_result_size,
};

/**
 * All the values one evaluation builds together may hold this many times expression_result_size
 * (a map and then a filter over the same large list build two lists), so that the values kept
 * alive at once, not only each of them, stay bounded.
 */
export const BUILT_TOTAL_FACTOR = 4;
/** Units of work (about one element copied or compared, or one node run) between two reads of the clock. */
const CHECK_EVERY = 10_000;

const fmt = (n: number) => n.toLocaleString('en-US');

/** What the running evaluation has built and done so far, against its limits. */
export class Meter {
  max = 0;
  totalMax = 0;
  ms = 0;
  built = 0;
  work = 0;
  nextCheck = CHECK_EVERY;
  /** When the clock was first read (0: not yet): the deadline counts from there. */
  startedAt = 0;
  /** The limit this evaluation reached; cel-js swallows errors in `||`, `&&`, `all` and `exists`, so it is thrown again at the end. */
  failure: LimitExceededError | null = null;
  /** A watchdog interrupted cel-js mid-way. */
  interrupted = false;

  reset(ms: number, maxSize: number): void {
    this.max = maxSize;
    this.totalMax = maxSize * BUILT_TOTAL_FACTOR;
    this.ms = ms;
    this.built = 0;
    this.work = 0;
    this.nextCheck = CHECK_EVERY;
    this.startedAt = 0;
    this.failure = null;
    this.interrupted = false;
  }

  /** A value of `size` is about to be built, taking `cost` of memory and work (default: its size). */
  build(size: number, what: string, unit: string, cost = size): void {
    if (size > this.max) this.fail(sizeError(size, what, unit, this.max));
    this.built += cost;
    if (this.built > this.totalMax) {
      this.fail(new LimitExceededError('expression_result_size', this.max,
        `the expression would build more than ${fmt(this.totalMax)} elements, entries and characters in all, over ${BUILT_TOTAL_FACTOR} times the plan's expression_result_size limit of ${fmt(this.max)}`));
    }
    this.tick(cost);
  }

  tick(units: number): void {
    this.work += units;
    if (this.work >= this.nextCheck) this.check();
  }

  check(): void {
    if (this.failure) throw this.failure;
    const now = performance.now();
    // Started at the first read: a simple evaluation never pays for the clock, and the deadline is late by one slice of work at most.
    if (!this.startedAt) this.startedAt = now;
    else if (now - this.startedAt > this.ms) this.fail(this.timeoutError());
    this.nextCheck = this.work + CHECK_EVERY;
  }

  remainingMs(): number {
    const now = performance.now();
    if (!this.startedAt) this.startedAt = now;
    return this.ms - (now - this.startedAt);
  }

  timeoutError(): LimitExceededError {
    return new LimitExceededError('expression_ms', this.ms, `the expression ran longer than the plan's expression_ms limit of ${fmt(this.ms)} ms`);
  }

  fail(error: LimitExceededError): never {
    this.failure ??= error;
    // Every later metered node throws at once, even if cel-js swallowed this error.
    this.nextCheck = -Infinity;
    throw this.failure;
  }
}

/** `what` (`a list`) of `size` `unit` (`elements`) would pass the cap `max`. */
export function sizeError(size: number, what: string, unit: string, max: number): LimitExceededError {
  return new LimitExceededError('expression_result_size', max, `the expression would build ${what} of ${fmt(size)} ${unit}, over the plan's expression_result_size limit of ${fmt(max)}`);
}

/** The evaluation in progress (evaluations are synchronous and never nested, so one is enough). */
export const meter = new Meter();

let watchdog: { context: vm.Context; script: vm.Script } | null = null;

/**
 * Runs `fn` under a deadline. Not a sandbox (the code is cel-js, trusted): a vm script's `timeout`
 * is the only way Node offers to interrupt synchronous code, a runaway regular expression included.
 * Throws the vm's ERR_SCRIPT_EXECUTION_TIMEOUT error when the deadline passes.
 */
export function runWithDeadline<T>(fn: () => T, timeoutMs: number): T {
  watchdog ??= { context: vm.createContext(Object.create(null)), script: new vm.Script('run()') };
  const { context, script } = watchdog;
  const previous = context.run;
  context.run = fn;
  try {
    return script.runInContext(context, { timeout: Math.max(1, Math.ceil(timeoutMs)) }) as T;
  } finally {
    context.run = previous;
  }
}

export const isWatchdogTimeout = (error: unknown) => (error as { code?: unknown })?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';

/**
 * Runs one evaluation, `fn(arg)`, within `ms` and `maxSize` (the plan's expression_ms and
 * expression_result_size); with `watchdog`, all of it runs under the vm deadline too. Throws what
 * the evaluation threw, or the `LimitExceededError` it reached, which wins over anything cel-js
 * threw after it (or swallowed).
 */
export function runMetered<A, T>(fn: (arg: A) => T, arg: A, ms: number, maxSize: number, watchdog = false): T {
  meter.reset(ms, maxSize);
  let value: T;
  try {
    value = watchdog ? runWithDeadline(() => fn(arg), ms) : fn(arg);
  } catch (error) {
    if (isWatchdogTimeout(error)) {
      meter.interrupted = true;
      throw meter.failure ?? meter.timeoutError();
    }
    throw meter.failure ?? error;
  }
  if (meter.failure) throw meter.failure;
  return value;
}

/** The last evaluation was stopped by a watchdog mid-way: its tree's scratch state may be half-written. */
export const lastRunInterrupted = () => meter.interrupted;
