// The judge's metered spend, read from the usage_daily rollup (written by the usage feature's
// trigger on usage_events, which the case statement in store/eval-runs.ts inserts into); this
// module writes nothing. The rollup rather than the events: the budget check runs on every
// judging request, and a month's spend must not shrink when retention deletes old events.
import type { SqlRunner } from './eval-runs.js';

/** What the tenant's judge calls (usage kind eval_judge) cost on and after the UTC day starting at `since`, in USD. */
export async function sumJudgeSpendSince(sql: SqlRunner, tenantId: string, since: Date): Promise<number> {
  // Raw: it runs on the SqlPool (the run loop and the admission transaction use it), where Kysely is not available.
  const [row] = await sql.query<{ used: string }>(
    `select coalesce(sum(cost_usd), 0)::text as used from usage_daily where tenant_id = $1 and day >= $2::date and kind = 'eval_judge'`,
    [tenantId, since.toISOString().slice(0, 10)],
  );
  return Number(row.used);
}
