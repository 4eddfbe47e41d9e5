// The judge's metered spend, read from the usage_daily rollup (written by the usage feature's
// trigger on usage_events, which the case statement in store/eval-results.ts inserts into); this
// module writes nothing. The rollup rather than the events: the budget check runs on every
// judging request, and a month's spend must not shrink when retention deletes old events.
import { sql } from 'kysely';
import { build, runBuilt } from '../../../db/statements.js';
import type { SqlRunner } from './eval-runs.js';

/** What the tenant's judge calls (usage kind eval_judge) cost on and after the UTC day starting at `since`, in USD. */
export async function sumJudgeSpendSince(sql: SqlRunner, tenantId: string, since: Date): Promise<number> {
  const [row] = await runBuilt(sql.query, judgeSpendOf(tenantId, since.toISOString().slice(0, 10)));
  return Number(row.used);
}

function judgeSpendOf(tenantId: string, sinceDay: string) {
  return build
    .selectFrom('usage_daily')
    .select(sql<string>`coalesce(sum(cost_usd), 0)::text`.as('used'))
    .where('tenant_id', '=', tenantId)
    .where('day', '>=', sql<string>`${sinceDay}::date`)
    .where('kind', '=', sql.lit('eval_judge'));
}
