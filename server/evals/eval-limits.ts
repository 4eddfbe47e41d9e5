// What a tenant may spend on evaluations: plans without evals get none, each plan has a monthly
// judge budget (the judge's model calls, metered like every call), and run-creating requests from
// API keys are rate limited. Decided in PostgreSQL so several processes agree.
import type { SqlPool } from '../../db/sql-pool.js';
import { startOfMonth, startOfNextMonth } from '../common/schemas.js';
import { AppError } from '../errors.js';

type Query = SqlPool['query'];

/** Monthly judge budget in USD per plan; null: unlimited. Plans not listed have no evals. */
export const JUDGE_BUDGET_USD: Record<string, number | null> = { trial: 5, starter: 50, pro: 500, enterprise: null };

/** Run-creating requests one tenant may make per minute with API keys. */
export const EVAL_RUNS_PER_MINUTE = 30;

/** Judge spend of this UTC month: every judge call metered (runs, scores, pairwise comparisons). */
export async function judgeSpendThisMonth(query: Query, tenantId: string): Promise<number> {
  const [row] = await query<{ used: string }>(
    `select coalesce(sum(cost_usd), 0)::text as used from usage_events where tenant_id = $1 and kind = 'eval_judge' and created_at >= $2`,
    [tenantId, startOfMonth()],
  );
  return Number(row.used);
}

/** The plan's monthly judge budget (null: unlimited); 429 EVALS_NOT_AVAILABLE for plans without evals. */
export function judgeBudgetOf(plan: string): number | null {
  if (!(plan in JUDGE_BUDGET_USD)) {
    throw new AppError('EVALS_NOT_AVAILABLE', `Evaluations are not available on the ${plan} plan`, { plan });
  }
  return JUDGE_BUDGET_USD[plan];
}

async function assertUnderBudget(query: Query, tenantId: string, budget: number | null) {
  if (budget === null) return;
  const used = await judgeSpendThisMonth(query, tenantId);
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
  await assertUnderBudget(sql.query, tenantId, budget);
  return budget;
}

/**
 * Starts `runs` new runs through `write` when the plan has evals, the month's judge spend is under
 * its budget and the tenant started fewer than EVAL_RUNS_PER_MINUTE API runs in the last minute
 * (counting these). The checks and the write share one transaction holding the tenant's advisory
 * lock, so a burst of parallel requests, on any number of processes, gets exactly what the limit
 * allows, and several runs started together (compare-models) are written all or none.
 */
export async function admitEvalRuns<T>(sql: SqlPool, tenantId: string, plan: string, runs: number, write: (query: Query) => Promise<T>): Promise<T> {
  const budget = judgeBudgetOf(plan);
  return sql.transaction(async (query) => {
    await query('select pg_advisory_xact_lock(hashtextextended($1::text, 20261124))', [tenantId]);
    await assertUnderBudget(query, tenantId, budget);
    const [recent] = await query<{ n: number; oldest: Date | null }>(
      `select count(*)::int as n, min(started_at) as oldest from eval_runs where tenant_id = $1 and triggered_by = 'api' and started_at > now() - interval '60 seconds'`,
      [tenantId],
    );
    if (recent.n + runs > EVAL_RUNS_PER_MINUTE) {
      const retryAfter = recent.oldest ? Math.max(1, Math.ceil(60 - (Date.now() - new Date(recent.oldest).getTime()) / 1000)) : 60;
      throw new AppError(
        'RATE_LIMITED',
        `At most ${EVAL_RUNS_PER_MINUTE} evaluation runs a minute may be started`,
        { limit_per_minute: EVAL_RUNS_PER_MINUTE, retry_after_seconds: retryAfter },
        { 'Retry-After': String(retryAfter) },
      );
    }
    return write(query);
  });
}
