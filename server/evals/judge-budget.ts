// How much a slice of an evaluation run may still spend on the judge, and the spend it counts
// against. A plan without evaluations has no budget: its judge calls stop at once. A suite or
// external run is measured against all of the tenant's judging this month and the plan's budget; a
// live window (execution_mode online) against online judging alone and the tenant's own online cap,
// or less when the plan's budget for all judging (which online spend counts toward) runs out first.
import { monthKey } from '../common/schemas.js';
import { allowancesForPlan } from '../tenants/plan-limits.js';
import { judgeSpendThisMonth, onlineJudgeSpendThisMonth } from './eval-limits.js';
import type { ClaimedRun, SqlRunner } from './store/eval-runs.js';

/**
 * This month's judge spend of a tenant (or of its live windows), shared by all its slices running
 * in this process: each judged case adds to it at once, so concurrent runs of one tenant stop
 * together at the budget instead of each counting only its own calls since it started. Every slice
 * refreshes it from the usage events (which other processes write too) when it starts.
 */
export interface TenantSpend {
  /** The tenant's id, or `<id>:online` for its live windows. */
  key: string;
  month: string;
  spent: number;
  slices: number;
}

const tenantSpends = new Map<string, TenantSpend>();

function openTenantSpend(key: string, spent: number): TenantSpend {
  const month = monthKey();
  let entry = tenantSpends.get(key);
  if (!entry || entry.month !== month) tenantSpends.set(key, (entry = { key, month, spent, slices: 0 }));
  else entry.spent = Math.max(entry.spent, spent);
  entry.slices++;
  return entry;
}

/** The slice is over: the shared entry goes when no slice of its key uses it. */
export function closeTenantSpend(entry: TenantSpend): void {
  entry.slices--;
  if (entry.slices <= 0 && tenantSpends.get(entry.key) === entry) tenantSpends.delete(entry.key);
}

/** The run's judge budget this month in USD (null: unlimited) and the shared spend it is measured on (close it when the slice ends). */
export async function openJudgeBudget(
  sql: SqlRunner, run: Pick<ClaimedRun, 'tenant_id' | 'billing_plan' | 'execution_mode' | 'online_judge_budget_usd'>,
): Promise<{ limit: number | null; spend: TenantSpend }> {
  const evals = allowancesForPlan(run.billing_plan).evals;
  if (evals === null) return { limit: 0, spend: openTenantSpend(run.tenant_id, 0) };
  if (run.execution_mode !== 'online') {
    const spent = evals.judge_budget_usd === null ? 0 : await judgeSpendThisMonth(sql, run.tenant_id);
    return { limit: evals.judge_budget_usd, spend: openTenantSpend(run.tenant_id, spent) };
  }
  const cap = run.online_judge_budget_usd === null ? evals.online_judge_budget_usd : Number(run.online_judge_budget_usd);
  const [onlineSpent, allSpent] = await Promise.all([
    onlineJudgeSpendThisMonth(sql, run.tenant_id),
    evals.judge_budget_usd === null ? Promise.resolve(0) : judgeSpendThisMonth(sql, run.tenant_id),
  ]);
  const limit = evals.judge_budget_usd === null ? cap : Math.min(cap, onlineSpent + Math.max(0, evals.judge_budget_usd - allSpent));
  return { limit, spend: openTenantSpend(`${run.tenant_id}:online`, onlineSpent) };
}
