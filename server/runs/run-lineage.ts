// Runs start runs: an agent's workflow tool runs a workflow, a workflow's ai_agent step runs an
// agent, and so on. What a nested run inherits from the run that started it is its lineage: how
// deep it is, how many runs the tree has started, the tree's cost budget, its deadline and its
// cancellation. Every level checks the tenant plan's nesting_depth and nested_runs before it starts,
// so one request can never fan out without end.
import type { RunBudget } from '../llm/run-budget.js';
import { LimitExceededError, type PlanLimits } from '../tenants/plan-limits.js';

export interface RunLineage {
  /** 1 for a run started from outside (a request, a webhook, a schedule); one more for each level below. */
  depth: number;
  /** Runs started below the root so far, shared by every level of the tree. */
  nested: { count: number };
  /** The budget every model call of the tree also draws from (the caller's), when there is one. */
  budget: RunBudget | null;
  /** When the tree's time is up (epoch ms); nested runs end by then too. */
  deadline: number | null;
  /** Aborted when the run above is cancelled or gives up on this one (a tool call's time limit). */
  signal: AbortSignal | null;
}

/** The lineage of a run started from outside, at `depth` (a run continued after a wait keeps its stored depth). */
export const rootLineage = (depth = 1): RunLineage => ({ depth, nested: { count: 0 }, budget: null, deadline: null, signal: null });

/**
 * The lineage of a run about to start inside the run of `parent`: refused with NESTING_TOO_DEEP or
 * NESTED_RUN_LIMIT when the plan allows no more. `budget`, `signal`: the starting step's own, when
 * narrower than the parent's (a tool call's time limit, the parent run's deadline).
 */
export function enterNestedRun(parent: RunLineage, limits: PlanLimits, what: string, own: { budget?: RunBudget | null; signal?: AbortSignal | null } = {}): RunLineage {
  if (parent.depth + 1 > limits.nesting_depth) {
    throw new LimitExceededError(
      'nesting_depth',
      limits.nesting_depth,
      `${what} would run at depth ${parent.depth + 1}; the plan allows runs nested ${limits.nesting_depth} deep (agents running workflows running agents ...)`,
      true,
    );
  }
  if (parent.nested.count + 1 > limits.nested_runs) {
    throw new LimitExceededError('nested_runs', limits.nested_runs, `${what} would be run number ${parent.nested.count + 1} started below one run; the plan allows ${limits.nested_runs}`, true);
  }
  parent.nested.count++;
  const signals = [parent.signal, own.signal].filter((s): s is AbortSignal => !!s);
  return {
    depth: parent.depth + 1,
    nested: parent.nested,
    budget: own.budget ?? parent.budget,
    deadline: parent.deadline,
    signal: signals.length > 1 ? AbortSignal.any(signals) : (signals[0] ?? null),
  };
}
