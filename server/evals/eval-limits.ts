// What a tenant may spend on evaluations: plans without evals get none, each plan has a monthly
// judge budget (both decided with every other plan allowance: tenants/plan-limits.ts), the judge's
// model calls are metered like every call, and run-creating requests from API keys are rate
// limited. Decided in PostgreSQL so several processes agree.
import type { SqlPool } from '../../db/sql-pool.js';
import { startOfMonth, startOfNextMonth } from '../common/schemas.js';
import { AppError } from '../errors.js';
import { allowancesForPlan } from '../tenants/plan-limits.js';
import { countRecentApiRuns, lockRunAdmission } from './store/eval-run-admission.js';
import type { SqlRunner } from './store/eval-runs.js';
import { sumJudgeSpendSince } from './store/judge-spend.js';

/** Run-creating requests one tenant may make per minute with API keys. */
export const EVAL_RUNS_PER_MINUTE = 30;

/** Judge spend of this UTC month: every judge call metered (runs, scores, pairwise comparisons). */
export async function judgeSpendThisMonth(sql: SqlRunner, tenantId: string): Promise<number> {
  return sumJudgeSpendSince(sql, tenantId, startOfMonth());
}

/** Online judge spend of this UTC month (live windows only): what the tenant's own online cap is measured against. */
export async function onlineJudgeSpendThisMonth(sql: SqlRunner, tenantId: string): Promise<number> {
  return sumJudgeSpendSince(sql, tenantId, startOfMonth(), true);
}

/** The plan's monthly judge budget (null: unlimited); 429 EVALS_NOT_AVAILABLE for plans without evals. */
export function judgeBudgetOf(plan: string): number | null {
  const evals = allowancesForPlan(plan).evals;
  if (evals === null) {
    throw new AppError('EVALS_NOT_AVAILABLE', `Evaluations are not available on the ${plan} plan`, { plan });
  }
  return evals.judge_budget_usd;
}

async function assertUnderBudget(sql: SqlRunner, tenantId: string, budget: number | null) {
  if (budget === null) return;
  const used = await judgeSpendThisMonth(sql, tenantId);
  if (used >= budget) {
    throw new AppError('EVALS_BUDGET_EXCEEDED', `This month's evaluation judge budget of $${budget} is spent`, {
      budget_usd: budget,
      used_usd: Number(used.toFixed(6)),
      resets_at: startOfNextMonth().toISOString(),
    });
  }
}

/**
 * Checks judging may go on without starting a run (score, pairwise, resume): the plan has evals
 * and this month's judge spend is under its budget. Returns the budget (null: unlimited).
 */
export async function assertEvalRunAllowed(sql: SqlPool, tenantId: string, plan: string): Promise<number | null> {
  const budget = judgeBudgetOf(plan);
  await assertUnderBudget(sql, tenantId, budget);
  return budget;
}

/**
 * Starts `runs` new runs through `write` when the plan has evals, the month's judge spend is under
 * its budget and the tenant started fewer than EVAL_RUNS_PER_MINUTE API runs in the last minute
 * (counting these). The checks and the write share one transaction holding the tenant's advisory
 * lock, so a burst of parallel requests, on any number of processes, gets exactly what the limit
 * allows, and several runs started together (compare-models) are written all or none.
 */
export async function admitEvalRuns<T>(sql: SqlPool, tenantId: string, plan: string, runs: number, write: (tx: SqlRunner) => Promise<T>): Promise<T> {
  const budget = judgeBudgetOf(plan);
  return sql.transaction(async (query) => {
    const tx: SqlRunner = { query };
    await lockRunAdmission(tx, tenantId);
    await assertUnderBudget(tx, tenantId, budget);
    const recent = await countRecentApiRuns(tx, tenantId);
    if (recent.n + runs > EVAL_RUNS_PER_MINUTE) {
      const retryAfter = recent.oldest ? Math.max(1, Math.ceil(60 - (Date.now() - new Date(recent.oldest).getTime()) / 1000)) : 60;
      throw new AppError(
        'RATE_LIMITED',
        `At most ${EVAL_RUNS_PER_MINUTE} evaluation runs a minute may be started`,
        { limit_per_minute: EVAL_RUNS_PER_MINUTE, retry_after_seconds: retryAfter },
        { 'Retry-After': String(retryAfter) },
      );
    }
    return write(tx);
  });
}
