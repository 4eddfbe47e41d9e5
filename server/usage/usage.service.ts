import type { EntityManager } from '../../db/orm.js';
import { AppError } from '../errors.js';
import { monthKey, startOfMonth } from '../common/schemas.js';
import { countAllUsers, countTenantsByActivity } from './store/platform-counts.js';
import { countUsageEventsByKind, insertUsageEvents, selectUsageTotals, sumUsageCounters, type UsageEventInput, type UsageTotalsRow } from './store/usage-events.js';

/** The first instant of the UTC month of `date`. */

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

// Costs stay decimal strings from the database (rounded to 6 places there): no float round trip.
const totals = (r: UsageTotalsRow) => ({ requests: Number(r.requests), tokens: Number(r.tokens), costUsd: r.cost });

/** Usage between two instants, for one tenant or (tenantId null) the whole platform. */
export async function getUsageReport(em: EntityManager, tenantId: string | null, range: UsageRange) {
  const { all, days, domains, intents } = await selectUsageTotals(em, tenantId, range.from, range.to);
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
  const tenants = await countTenantsByActivity(em);
  const month = await sumUsageCounters(em, monthKey(now));
  // The month starts in UTC, as the counters' month does, whatever the database session's time zone.
  const kinds = await countUsageEventsByKind(em, startOfMonth(now));
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
