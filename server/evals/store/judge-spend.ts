// The judge's metered spend, read from usage_events (written by the usage feature and by the case
// statement in store/eval-runs.ts); this module writes nothing.
import type { SqlRunner } from './eval-runs.js';

/** What the tenant's judge calls (usage kind eval_judge) cost since `since`, in USD. */
export async function sumJudgeSpendSince(sql: SqlRunner, tenantId: string, since: Date): Promise<number> {
  // Raw: it runs on the SqlPool (the run loop and the admission transaction use it), where Kysely is not available.
  const [row] = await sql.query<{ used: string }>(
    `select coalesce(sum(cost_usd), 0)::text as used from usage_events where tenant_id = $1 and kind = 'eval_judge' and created_at >= $2`,
    [tenantId, since],
  );
  return Number(row.used);
}
