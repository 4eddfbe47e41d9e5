// Reads for usage reports and platform statistics: whole UTC days from the usage_daily rollup
// (written only by the usage_events trigger, see ./usage-events.ts), raw usage_events only for the
// partial day at either edge of a range. This module writes nothing.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** What a report reads: whole days [from, to) (YYYY-MM-DD, UTC) from the rollup, and instants from raw events. */
export interface UsageReadPlan {
  days: { from: string; to: string } | null;
  raw: { from: Date; to: Date }[];
}

/** One row of a report: `set` says which grouping it belongs to. */
interface UsageReportRow {
  set: 'total' | 'day' | 'domain' | 'intent';
  day: string | null;
  domain: string | null;
  intent: string | null;
  /** Decimal strings (cost rounded to 6 places by the database). */
  requests: string;
  tokens: string;
  cost: string;
}

// grouping(day, domain, intent) of each grouping set: a bit is set where the column is rolled up.
const SETS: Record<number, UsageReportRow['set']> = { 7: 'total', 3: 'day', 5: 'domain', 4: 'intent' };

/**
 * The totals, per UTC day, per domain and per (domain, intent) of the events the plan covers, for
 * one tenant or (tenantId null) the whole platform, in one statement: days in order, domains and
 * intents busiest (most events) first. The totals row is always there.
 */
export async function selectUsageReport(em: EntityManager, tenantId: string | null, plan: UsageReadPlan): Promise<UsageReportRow[]> {
  const db = kyselyOf(em);
  const daily = (days: { from: string; to: string }) =>
    db
      .selectFrom('usage_daily')
      .select([
        sql<string>`day`.as('day'), 'domain', 'intent', sql<string>`requests`.as('requests'), sql<string>`events`.as('events'),
        sql<string>`total_tokens`.as('tokens'), sql<string>`cost_usd`.as('cost'),
      ])
      .where(sql<boolean>`day >= ${days.from}::date and day < ${days.to}::date`)
      .$if(tenantId !== null, (qb) => qb.where('tenant_id', '=', tenantId!));
  const raw = (spans: { from: Date; to: Date }[]) =>
    db
      .selectFrom('usage_events')
      .select([
        sql<string>`(created_at at time zone 'UTC')::date`.as('day'), 'domain', 'intent',
        sql<string>`count(*) filter (where counts_as_request)`.as('requests'), sql<string>`count(*)`.as('events'),
        sql<string>`coalesce(sum(total_tokens), 0)::bigint`.as('tokens'), sql<string>`coalesce(sum(cost_usd), 0)`.as('cost'),
      ])
      .where((eb) => eb.or(spans.map((s) => eb.and([eb('created_at', '>=', s.from), eb('created_at', '<', s.to)]))))
      .$if(tenantId !== null, (qb) => qb.where('tenant_id', '=', tenantId!))
      .groupBy(sql`1, 2, 3`);
  const parts = plan.days && plan.raw.length ? daily(plan.days).unionAll(raw(plan.raw)) : plan.days ? daily(plan.days) : raw(plan.raw);
  const rows = await db
    .with('parts', () => parts)
    .selectFrom('parts')
    .select([
      sql<number>`grouping(day, domain, intent)`.as('g'),
      sql<string | null>`to_char(day, 'YYYY-MM-DD')`.as('day'),
      'domain',
      'intent',
      sql<string>`coalesce(sum(requests), 0)::text`.as('requests'),
      sql<string>`coalesce(sum(tokens), 0)::text`.as('tokens'),
      sql<string>`round(coalesce(sum(cost), 0), 6)::text`.as('cost'),
    ])
    .groupBy(sql`grouping sets ((), (day), (domain), (domain, intent))`)
    // Events without an intent are in the totals, days and domains, not in the intents.
    .having(sql<boolean>`grouping(intent) = 1 or intent is not null`)
    .orderBy(sql`grouping(day, domain, intent)`)
    .orderBy(sql`parts.day`)
    .orderBy(sql`sum(events)`, 'desc')
    .orderBy('domain')
    .orderBy('intent')
    .execute();
  return rows.map(({ g, ...row }) => ({ set: SETS[g], ...row }));
}

/** How many events of each kind the platform recorded on and after the UTC day `since` (YYYY-MM-DD). */
export async function countEventsByKindSince(em: EntityManager, since: string): Promise<{ kind: string; runs: string }[]> {
  return kyselyOf(em)
    .selectFrom('usage_daily')
    .select(['kind', sql<string>`sum(events)::text`.as('runs')])
    .where(sql<boolean>`day >= ${since}::date`)
    .groupBy('kind')
    .orderBy('kind')
    .execute();
}
