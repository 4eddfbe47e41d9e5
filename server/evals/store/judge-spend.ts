// The judge's metered spend, read from the usage_daily rollup (written by the usage feature's
// trigger on usage_events, which the case statement in store/eval-results.ts inserts into); this
// module writes nothing. The rollup rather than the events: the budget check runs on every
// judging request, and a month's spend must not shrink when retention deletes old events.
import { sql } from 'kysely';
import { build, runBuilt } from '../../../db/statements.js';
import type { SqlRunner } from './eval-runs.js';

/**
 * What the tenant's judge calls cost on and after the UTC day starting at `since`, in USD: every
 * judge call (usage kinds eval_judge and online_judge), or with `onlineOnly` the live windows' alone.
 */
export async function sumJudgeSpendSince(sql: SqlRunner, tenantId: string, since: Date, onlineOnly = false): Promise<number> {
  const [row] = await runBuilt(sql.query, judgeSpendOf(tenantId, since.toISOString().slice(0, 10), onlineOnly));
  return Number(row.used);
}

function judgeSpendOf(tenantId: string, sinceDay: string, onlineOnly: boolean) {
  return build
    .selectFrom('usage_daily')
    .select(sql<string>`coalesce(sum(cost_usd), 0)::text`.as('used'))
    .where('tenant_id', '=', tenantId)
    .where('day', '>=', sql<string>`${sinceDay}::date`)
    .where(onlineOnly ? sql<boolean>`kind = 'online_judge'` : sql<boolean>`kind in ('eval_judge', 'online_judge')`);
}
