// The usage_events and usage_counters tables (metered operations and their monthly totals); this
// module alone writes them, or hands out the SQL the one-statement run writers embed.
//
// Every insert into usage_events also moves the usage_daily rollup (the totals per tenant, UTC day,
// kind, domain, intent, model and environment that reports read), in the same transaction, through
// the statement-level trigger usage_events_daily_rollup (migration
// Migration20261128140100_usage_daily). The trigger is the rollup's only writer: the run writers
// that embed insertUsageEventsSql in their own single statements stay one round trip, and no
// writer, present or future, can insert events and forget their totals. Deleting events (retention)
// leaves the rollup alone on purpose: the totals outlive the detail they summarise.
//
// Lock order: a transaction takes its tenant's usage_counters row before the usage_daily rows (the
// trigger fires at the end of the inserting statement, after a run writer's counter CTE; the
// insert below moves the counters first for the same reason). The counter row then queues a
// tenant's writers one at a time, so two of them never hold rollup rows the other one waits for.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { monthKey } from '../../common/schemas.js';

export interface UsageEventInput {
  tenantId: string;
  environmentId?: string | null;
  kind: string;
  domain?: string | null;
  intent?: string | null;
  model?: string | null;
  promptTokens?: number;
  completionTokens?: number;
  costUsd?: number;
  latencyMs?: number;
  status?: string;
  /** Whether the event counts as a request against the monthly request quota (default true). */
  countsAsRequest?: boolean;
}

/**
 * SQL inserting the usage events given as JSON rows (usageRowsOf) in parameter `jsonParam`, for
 * one-statement run writers; `where` may make the insert depend on another part of the statement.
 * It is a fragment of other modules' hot single-statement writers (jsonb_to_recordset).
 */
// Raw(other): an insert from jsonb_to_recordset, embedded in other modules' one-statement writers.
export const insertUsageEventsSql = (jsonParam: string, where = '') => `
  insert into usage_events (id, tenant_id, environment_id, kind, domain, intent, model, prompt_tokens, completion_tokens,
                            total_tokens, cost_usd, latency_ms, status, counts_as_request, created_at)
  select gen_random_uuid(), e.tenant_id, e.environment_id, e.kind, e.domain, e.intent, e.model, e.prompt_tokens, e.completion_tokens,
         e.prompt_tokens + e.completion_tokens, e.cost_usd, e.latency_ms, e.status, e.counts_as_request, now()
    from jsonb_to_recordset(${jsonParam}::jsonb) as e(tenant_id uuid, environment_id uuid, kind text, domain text, intent text, model text,
         prompt_tokens int, completion_tokens int, cost_usd numeric, latency_ms int, status text, counts_as_request boolean)
  ${where}
  returning 1`;

/**
 * The monthly counter upsert's conflict clause: totals are added to the month's row, which comes
 * back for the quota check (QUOTA_CROSSED_SQL reads the CTE it is in, named `counter`).
 */
export const ADD_TO_USAGE_COUNTER_SQL = `on conflict (tenant_id, month) do update set requests = usage_counters.requests + excluded.requests,
    tokens = usage_counters.tokens + excluded.tokens, cost_usd = usage_counters.cost_usd + excluded.cost_usd
  returning tenant_id, month, requests, tokens`;

/** `after` moved past a mark of `quota` (80% or 100%) by `added`: plain arithmetic, no call. */
const crossedSql = (quota: string, after: string, added: string) =>
  `(${quota} > 0 and ((${after} - ${added} < ceil(${quota} * 0.8) and ${after} >= ceil(${quota} * 0.8)) or (${after} - ${added} < ${quota} and ${after} >= ${quota})))`;

/**
 * The quota events of a counter upsert (a CTE named `counter`, ADD_TO_USAGE_COUNTER_SQL's row), as
 * a CTE `quota_crossed` the statement must read: quota.warning at 80% and quota.exhausted at 100%
 * of the tenant's monthly quotas, recorded by liya_quota_crossings (the events migrations) in the
 * statement's own transaction. The counter row is the hottest row there is (every run of a tenant
 * moves it), so nothing runs but arithmetic until a run moves a total past a mark; the row's lock
 * orders concurrent runs, so exactly one sees each crossing. `addedRequests` and `addedTokens` are
 * the SQL of what this statement added.
 */
// Raw(other): a fragment of the one-statement writers above (a liya_quota_crossings call).
export const quotaCrossedSql = (addedRequests: string, addedTokens: string) => `quota_crossed as (
  select liya_quota_crossings(c.tenant_id, c.month, 'requests', t.monthly_request_quota::bigint, c.requests - ${addedRequests}, c.requests)
       + liya_quota_crossings(c.tenant_id, c.month, 'tokens', t.monthly_token_quota, c.tokens - ${addedTokens}, c.tokens) as recorded
    from counter c join tenants t on t.id = c.tenant_id
   where ${crossedSql('t.monthly_request_quota', 'c.requests', addedRequests)} or ${crossedSql('t.monthly_token_quota', 'c.tokens', addedTokens)}
)`;

/**
 * Usage events as the JSON rows the one-statement run writers insert (`jsonb_to_recordset`), with
 * the totals their counter upsert adds.
 */
export function usageRowsOf(usage: UsageEventInput[]) {
  return {
    requests: usage.filter((u) => u.countsAsRequest !== false).length,
    tokens: usage.reduce((sum, u) => sum + (u.promptTokens ?? 0) + (u.completionTokens ?? 0), 0),
    cost: usage.reduce((sum, u) => sum + (u.costUsd ?? 0), 0),
    json: JSON.stringify(
      usage.map((u) => ({
        tenant_id: u.tenantId,
        environment_id: u.environmentId ?? null,
        kind: u.kind,
        domain: u.domain ?? null,
        intent: u.intent ?? null,
        model: u.model ?? null,
        prompt_tokens: u.promptTokens ?? 0,
        completion_tokens: u.completionTokens ?? 0,
        cost_usd: (u.costUsd ?? 0).toFixed(6),
        latency_ms: Math.round(u.latencyMs ?? 0),
        status: u.status ?? 'ok',
        counts_as_request: u.countsAsRequest !== false,
      })),
    ),
  };
}

/**
 * Writes usage events and moves the tenants' monthly counters, in the caller's transaction (so
 * counters and events never disagree). One upsert per tenant (in tenant order), then one statement
 * for the events (whose trigger moves the daily rollup).
 */
export async function insertUsageEvents(em: EntityManager, inputs: UsageEventInput[]): Promise<void> {
  if (inputs.length === 0) return;
  // One instant for the events and the counters' month, so both land in the same month.
  const now = new Date();
  const counters = new Map<string, { requests: number; tokens: number; cost: number }>();
  const events = inputs.map((input) => {
    const prompt = input.promptTokens ?? 0;
    const completion = input.completionTokens ?? 0;
    const counts = input.countsAsRequest !== false;
    const c = counters.get(input.tenantId) ?? { requests: 0, tokens: 0, cost: 0 };
    c.requests += counts ? 1 : 0;
    c.tokens += prompt + completion;
    c.cost += input.costUsd ?? 0;
    counters.set(input.tenantId, c);
    return {
      id: sql<string>`gen_random_uuid()`, tenant_id: input.tenantId, environment_id: input.environmentId ?? null, kind: input.kind, domain: input.domain ?? null,
      intent: input.intent ?? null, model: input.model ?? null, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
      cost_usd: (input.costUsd ?? 0).toFixed(6), latency_ms: Math.round(input.latencyMs ?? 0), status: input.status ?? 'ok', counts_as_request: counts, created_at: now,
    };
  });
  // Metering is on the hot path of every run: one statement per tenant's counter, then one for
  // every event (a multi-row insert). Counters first and in tenant order: the lock order in this
  // module's header.
  const db = kyselyOf(em);
  for (const [tenantId, c] of [...counters].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    // The upsert and its quota check (quotaCrossedSql) in one statement.
    // Raw(other): the counter upsert shared with the one-statement writers (ADD_TO_USAGE_COUNTER_SQL) and its quota check CTE.
    await sql`with counter as (
        insert into usage_counters (tenant_id, month, requests, tokens, cost_usd)
        values (${tenantId}::uuid, ${monthKey(now)}, ${c.requests}::bigint, ${c.tokens}::bigint, ${c.cost.toFixed(6)}::numeric)
        ${sql.raw(ADD_TO_USAGE_COUNTER_SQL)}
      ), ${sql.raw(quotaCrossedSql(String(Math.trunc(c.requests)), String(Math.trunc(c.tokens))))}
      select (select count(*) from quota_crossed) as checked`.execute(db);
  }
  await db.insertInto('usage_events').values(events).execute();
}

/** Requests, tokens and cost as decimal strings (cost rounded to 6 places by the database). */
export interface UsageTotalsRow {
  requests: string;
  tokens: string;
  cost: string;
}

/** The platform's counters for `month` (YYYY-MM) summed, as decimal strings. */
export async function sumUsageCounters(em: EntityManager, month: string): Promise<UsageTotalsRow> {
  return kyselyOf(em)
    .selectFrom('usage_counters')
    .select([
      sql<string>`coalesce(sum(requests), 0)::text`.as('requests'),
      sql<string>`coalesce(sum(tokens), 0)::text`.as('tokens'),
      sql<string>`round(coalesce(sum(cost_usd), 0), 6)::text`.as('cost'),
    ])
    .where('month', '=', month)
    .executeTakeFirstOrThrow();
}
