import type { EntityManager } from '../../db/orm.js';
import { AppError } from '../errors.js';
import { monthKey, startOfMonth } from '../common/schemas.js';
import { countAllUsers, countTenantsByActivity } from './store/platform-counts.js';
import { insertUsageEvents, sumUsageCounters, type UsageEventInput, type UsageTotalsRow } from './store/usage-events.js';
import { countEventsByKindSince, selectUsageReport } from './store/usage-reports.js';
import { planUsageRead, utcDay } from './usage-read-plan.js';

// The SQL of usage_events and usage_counters lives in the store; callers keep importing it from here.
export type { UsageEventInput } from './store/usage-events.js';

/**
 * Writes usage events and moves the tenants' monthly counters, in the caller's transaction (so
 * counters and events never disagree). One statement for the events, one upsert per tenant.
 */
export async function writeUsageEvents(em: EntityManager, inputs: UsageEventInput[]): Promise<void> {
  await insertUsageEvents(em, inputs);
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
  /** When the range was resolved: no event is recorded after it yet. */
  asOf: Date;
}

/** How a usage report is computed and what survives retention (the reports' OpenAPI description). */
export const USAGE_REPORT_NOTE =
  'Events with `from` <= created_at < `to` (default: the start of this UTC month until now), as totals, per UTC day (`days`, in order), ' +
  'per domain and per (domain, intent) (busiest first; events without an intent are not in `intents`). ' +
  'Whole UTC days are read from daily usage totals kept in the same transaction as each usage event, so a report costs the same whatever the history; ' +
  'a range starting or ending inside a day reads the events of that partial day. The daily and monthly totals are never deleted by retention: ' +
  'whole days stay reported after their events are gone, while a partial day only counts the events still kept.';

/** Default range: the current month so far. */
export function resolveRange(from?: string, to?: string, now = new Date()): UsageRange {
  const start = from ? new Date(from) : startOfMonth(now);
  const end = to ? new Date(to) : now;
  if (start.getTime() > end.getTime()) {
    throw new AppError('INVALID_INPUT', '`from` must not be after `to`', { issues: [{ path: 'from', message: 'must not be after to' }] });
  }
  return { from: start, to: end, asOf: now };
}

// Costs stay decimal strings from the database (rounded to 6 places there): no float round trip.
const totals = (r: UsageTotalsRow) => ({ requests: Number(r.requests), tokens: Number(r.tokens), costUsd: r.cost });

/**
 * Usage between two instants, for one tenant or (tenantId null) the whole platform. Whole UTC days
 * come from the daily rollup and only a partial first or last day from raw events, so the report
 * costs the same however much history there is, and stays whole after retention deletes the events.
 */
export async function getUsageReport(em: EntityManager, tenantId: string | null, range: UsageRange) {
  const plan = planUsageRead(range);
  const rows = plan.days || plan.raw.length ? await selectUsageReport(em, tenantId, plan) : [];
  const of = (set: string) => rows.filter((r) => r.set === set);
  const [all] = of('total');
  return {
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    totals: all ? totals(all) : { requests: 0, tokens: 0, costUsd: '0.000000' },
    days: of('day').map((d) => ({ date: d.day!, ...totals(d) })),
    domains: of('domain').map((d) => ({ domain: d.domain, ...totals(d) })),
    intents: of('intent').map((d) => ({ domain: d.domain, intent: d.intent, ...totals(d) })),
  };
}

/** Platform totals for the admin API. */
export async function getPlatformStats(em: EntityManager, now = new Date()) {
  const tenants = await countTenantsByActivity(em);
  const month = await sumUsageCounters(em, monthKey(now));
  // The month starts in UTC, as the counters' month does (the rollup's days are UTC days).
  const kinds = await countEventsByKindSince(em, utcDay(startOfMonth(now)));
  const users = await countAllUsers(em);
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
