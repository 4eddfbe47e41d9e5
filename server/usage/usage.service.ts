import type { EntityManager } from '../../db/orm.js';
import { AppError } from '../errors.js';
import { monthKey, startOfMonth } from '../common/schemas.js';

/** The first instant of the UTC month of `date`. */

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
 */
export const insertUsageEventsSql = (jsonParam: string, where = '') => `
  insert into usage_events (id, tenant_id, environment_id, kind, domain, intent, model, prompt_tokens, completion_tokens,
                            total_tokens, cost_usd, latency_ms, status, counts_as_request, created_at)
  select gen_random_uuid(), e.tenant_id, e.environment_id, e.kind, e.domain, e.intent, e.model, e.prompt_tokens, e.completion_tokens,
         e.prompt_tokens + e.completion_tokens, e.cost_usd, e.latency_ms, e.status, e.counts_as_request, now()
    from jsonb_to_recordset(${jsonParam}::jsonb) as e(tenant_id uuid, environment_id uuid, kind text, domain text, intent text, model text,
         prompt_tokens int, completion_tokens int, cost_usd numeric, latency_ms int, status text, counts_as_request boolean)
  ${where}
  returning 1`;

/** The monthly counter upsert's conflict clause: totals are added to the month's row. */
export const ADD_TO_USAGE_COUNTER_SQL = `on conflict (tenant_id, month) do update set requests = usage_counters.requests + excluded.requests,
    tokens = usage_counters.tokens + excluded.tokens, cost_usd = usage_counters.cost_usd + excluded.cost_usd`;

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
 * counters and events never disagree). One statement for the events, one upsert per tenant.
 */
export async function writeUsageEvents(em: EntityManager, inputs: UsageEventInput[]): Promise<void> {
  if (inputs.length === 0) return;
  // One instant for the events and the counters' month, so both land in the same month.
  const now = new Date();
  const rows: unknown[] = [];
  const counters = new Map<string, { requests: number; tokens: number; cost: number }>();
  for (const input of inputs) {
    const prompt = input.promptTokens ?? 0;
    const completion = input.completionTokens ?? 0;
    const counts = input.countsAsRequest !== false;
    rows.push(
      input.tenantId, input.environmentId ?? null, input.kind, input.domain ?? null, input.intent ?? null, input.model ?? null,
      prompt, completion, prompt + completion, (input.costUsd ?? 0).toFixed(6), Math.round(input.latencyMs ?? 0), input.status ?? 'ok', counts, now,
    );
    const c = counters.get(input.tenantId) ?? { requests: 0, tokens: 0, cost: 0 };
    c.requests += counts ? 1 : 0;
    c.tokens += prompt + completion;
    c.cost += input.costUsd ?? 0;
    counters.set(input.tenantId, c);
  }
  const values = inputs.map(() => '(gen_random_uuid(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
  await em.execute(
    `insert into usage_events (id, tenant_id, environment_id, kind, domain, intent, model, prompt_tokens, completion_tokens, total_tokens,
       cost_usd, latency_ms, status, counts_as_request, created_at) values ${values}`,
    rows,
  );
  for (const [tenantId, c] of counters) {
    await em.execute(
      `insert into usage_counters (tenant_id, month, requests, tokens, cost_usd) values (?, ?, ?, ?, ?) ${ADD_TO_USAGE_COUNTER_SQL}`,
      [tenantId, monthKey(now), c.requests, c.tokens, c.cost.toFixed(6)],
    );
  }
}

/** Records one metered operation in its own transaction. */
export async function recordUsage(em: EntityManager, input: UsageEventInput): Promise<void> {
  await em.transactional((tx) => writeUsageEvents(tx, [input]));
}

export interface MonthlyUsage {
  requests: number;
  tokens: number;
  costUsd: number;
}

export interface UsageRange {
  from: Date;
  to: Date;
}

/** Default range: the current month so far. */
export function resolveRange(from?: string, to?: string): UsageRange {
  const now = new Date();
  const start = from ? new Date(from) : startOfMonth(now);
  const end = to ? new Date(to) : now;
  if (start.getTime() > end.getTime()) {
    throw new AppError('INVALID_INPUT', '`from` must not be after `to`', { issues: [{ path: 'from', message: 'must not be after to' }] });
  }
  return { from: start, to: end };
}

interface Totals {
  requests: string;
  tokens: string;
  cost: string;
}

// Costs stay decimal strings from the database (rounded to 6 places there): no float round trip.
const totals = (r: Totals) => ({ requests: Number(r.requests), tokens: Number(r.tokens), costUsd: r.cost });

/** Usage between two instants, for one tenant or (tenantId null) the whole platform. */
export async function getUsageReport(em: EntityManager, tenantId: string | null, range: UsageRange) {
  const where = `created_at >= ? and created_at < ?${tenantId ? ' and tenant_id = ?' : ''}`;
  const params = tenantId ? [range.from, range.to, tenantId] : [range.from, range.to];
  const agg = `count(*) filter (where counts_as_request)::text as requests, coalesce(sum(total_tokens), 0)::text as tokens, round(coalesce(sum(cost_usd), 0), 6)::text as cost`;
  const [all] = await em.execute<Totals[]>(`select ${agg} from usage_events where ${where}`, params);
  const days = await em.execute<(Totals & { day: string })[]>(
    `select to_char(date_trunc('day', created_at at time zone 'UTC'), 'YYYY-MM-DD') as day, ${agg} from usage_events where ${where} group by 1 order by 1`,
    params,
  );
  const domains = await em.execute<(Totals & { domain: string | null })[]>(
    `select domain, ${agg} from usage_events where ${where} group by domain order by count(*) desc, domain`,
    params,
  );
  const intents = await em.execute<(Totals & { domain: string | null; intent: string | null })[]>(
    `select domain, intent, ${agg} from usage_events where ${where} and intent is not null group by domain, intent order by count(*) desc, domain, intent`,
    params,
  );
  return {
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    totals: totals(all),
    days: days.map((d) => ({ date: d.day, ...totals(d) })),
    domains: domains.map((d) => ({ domain: d.domain, ...totals(d) })),
    intents: intents.map((d) => ({ domain: d.domain, intent: d.intent, ...totals(d) })),
  };
}

/** Platform totals for the admin API. */
export async function getPlatformStats(em: EntityManager, now = new Date()) {
  const [tenants] = await em.execute<{ total: string; active: string }[]>(
    `select count(*)::text as total, count(*) filter (where is_active)::text as active from tenants`,
  );
  const [month] = await em.execute<{ requests: string; tokens: string; cost: string }[]>(
    `select coalesce(sum(requests), 0)::text as requests, coalesce(sum(tokens), 0)::text as tokens, round(coalesce(sum(cost_usd), 0), 6)::text as cost
       from usage_counters where month = ?`,
    [monthKey(now)],
  );
  // The month starts in UTC, as the counters' month does, whatever the database session's time zone.
  const kinds = await em.execute<{ kind: string; runs: string }[]>(
    `select kind, count(*)::text as runs from usage_events where created_at >= ? group by kind order by kind`,
    [startOfMonth(now)],
  );
  const [users] = await em.execute<{ total: string }[]>('select count(*)::text as total from users');
  return {
    tenants: Number(tenants.total),
    activeTenants: Number(tenants.active),
    users: Number(users.total),
    requestsThisMonth: Number(month.requests),
    tokensThisMonth: month.tokens,
    costThisMonth: month.cost,
    runsByKind: Object.fromEntries(kinds.map((k) => [k.kind, Number(k.runs)])),
  };
}
