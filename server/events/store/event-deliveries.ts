// event_deliveries and event_delivery_attempts: the runner's claims and outcomes (on the SqlPool),
// the delivery log's reads, replays and resumes. The triggers' liya_record_event (the events
// migration) inserts the first delivery of each event; everything after is written here.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, statement } from '../../../db/statements.js';
import { deliverEventsJob } from '../../jobs/contracts.js';
import { enqueue, enqueueWith } from '../../jobs/store/job-queue.js';

export interface ClaimedDelivery {
  id: string;
  attempts: number;
  subscription_id: string;
  event_id: string;
  type: string;
  version: number;
  data: Record<string, unknown>;
  /** The event's time, ISO 8601 UTC with milliseconds. */
  created_at: string;
  created_ms: number;
  url: string;
  secret: string;
  /** The secret before the last rotation, while its grace lasts. */
  previous_secret: string | null;
}

// Claims due deliveries of one tenant whose subscription is enabled and not paused: each claimed
// delivery's attempt is counted and its next attempt moved past a lease, so a runner that dies
// mid-send leaves it due again when the lease ends (the receiver sees the same webhook-id twice at
// most, and deduplicates). Skip-locked: two runners never claim one delivery.
const CLAIM = statement<{ tenantId: string; limit: number; leaseSeconds: number }>()('liya_event_claim', (p) =>
  build
    .with('due', (db) =>
      db
        .selectFrom('event_deliveries as d')
        .innerJoin('event_subscriptions as s', 's.id', 'd.subscription_id')
        .select('d.id')
        .where('d.tenant_id', '=', p.tenantId)
        .where('d.status', '=', sql.lit('pending'))
        .where('d.next_attempt_at', '<=', sql<Date>`now()`)
        .where('s.enabled', '=', sql.lit(true))
        .where('s.paused_at', 'is', null)
        .orderBy('d.next_attempt_at')
        .orderBy('d.created_at')
        .limit(p.limit)
        .forUpdate('d')
        .skipLocked(),
    )
    .with('claimed', (db) =>
      db
        .updateTable('event_deliveries as d')
        .from('due')
        .set({ attempts: sql`d.attempts + 1`, next_attempt_at: sql`now() + make_interval(secs => ${p.leaseSeconds}::float8)` })
        .whereRef('d.id', '=', 'due.id')
        .returning(['d.id', 'd.attempts', 'd.subscription_id', 'd.event_id']),
    )
    .selectFrom('claimed as c')
    .innerJoin('events as e', 'e.id', 'c.event_id')
    .innerJoin('event_subscriptions as s', 's.id', 'c.subscription_id')
    .select([
      'c.id', 'c.attempts', 'c.subscription_id', 'c.event_id', 'e.type', 'e.version', 'e.data',
      sql<string>`liya_iso(e.created_at)`.as('created_at'),
      sql<number>`(extract(epoch from e.created_at) * 1000)::float8`.as('created_ms'),
      's.url', 's.secret',
      sql<string | null>`case when s.previous_secret_expires_at > now() then s.previous_secret end`.as('previous_secret'),
    ])
    .orderBy('e.created_at'),
).as<ClaimedDelivery>();

export function claimDueDeliveries(sqlPool: SqlPool, tenantId: string, limit: number, leaseSeconds: number): Promise<ClaimedDelivery[]> {
  return CLAIM.run(sqlPool, { tenantId, limit, leaseSeconds });
}

export interface DeliveryOutcome {
  deliveryId: string;
  tenantId: string;
  attempt: number;
  statusCode: number | null;
  latencyMs: number;
  excerpt: string | null;
  error: string | null;
  /** delivered; retry (after `retrySeconds`); failed: out of attempts. */
  outcome: 'delivered' | 'retry' | 'failed';
  retrySeconds: number;
  /** Pause the subscription now (the receiver said 410 Gone). */
  gone: boolean;
  /** Deliveries in a row that may fail every attempt before the subscription is paused. */
  pauseAfter: number;
  /** The reason a pause records. */
  pauseReason: string;
}

// One attempt settled in one statement: the attempt logged, the delivery moved on, and the
// subscription's run of failed deliveries counted (and the subscription paused when it is long
// enough, or at once on 410 Gone). The subscription row is touched only when something changes.
const SETTLE = statement<{
  deliveryId: string; tenantId: string; attempt: number; statusCode: number | null; latencyMs: number; excerpt: string | null; error: string | null;
  outcome: string; retrySeconds: number; gone: boolean; pauseAfter: number; pauseReason: string;
}>()('liya_event_settle', (p) =>
  build
    .with('attempt', (db) =>
      db.insertInto('event_delivery_attempts').values({
        tenant_id: p.tenantId,
        delivery_id: p.deliveryId,
        attempt: p.attempt,
        status_code: p.statusCode,
        latency_ms: p.latencyMs,
        response_excerpt: p.excerpt,
        error: p.error,
        created_at: sql`now()`,
      }),
    )
    .with('delivery', (db) =>
      db
        .updateTable('event_deliveries')
        .set({
          status: sql`case ${p.outcome}::text when 'delivered' then 'delivered' when 'failed' then 'failed' else 'pending' end`,
          next_attempt_at: sql`case when ${p.outcome}::text = 'retry' then now() + make_interval(secs => ${p.retrySeconds}::float8) end`,
          delivered_at: sql`case when ${p.outcome}::text = 'delivered' then now() end`,
          last_status: p.statusCode,
          last_error: p.error,
        })
        .where('id', '=', p.deliveryId)
        .where('tenant_id', '=', p.tenantId)
        .returning('subscription_id'),
    )
    .with('subscription', (db) =>
      db
        .updateTable('event_subscriptions as s')
        .from('delivery')
        .set({
          failed_deliveries: sql`case ${p.outcome}::text when 'delivered' then 0 when 'failed' then s.failed_deliveries + 1 else s.failed_deliveries end`,
          paused_at: sql`case when s.paused_at is null and (${p.gone}::boolean or (${p.outcome}::text = 'failed' and s.failed_deliveries + 1 >= ${p.pauseAfter}::int)) then now() else s.paused_at end`,
          paused_reason: sql`case when s.paused_at is null and (${p.gone}::boolean or (${p.outcome}::text = 'failed' and s.failed_deliveries + 1 >= ${p.pauseAfter}::int)) then ${p.pauseReason}::text else s.paused_reason end`,
        })
        .whereRef('s.id', '=', 'delivery.subscription_id')
        .where('s.tenant_id', '=', p.tenantId)
        // Parenthesised as a whole: Kysely joins it to the row condition above with AND.
        .where(sql<boolean>`((${p.outcome}::text = 'delivered' and s.failed_deliveries <> 0) or ${p.outcome}::text = 'failed' or ${p.gone}::boolean)`)
        .returning(sql<boolean>`s.paused_at is not null`.as('paused')),
    )
    .selectNoFrom(sql<boolean>`coalesce((select paused from subscription), false)`.as('paused')),
);

/** Records an attempt's outcome; whether the subscription is now paused (when it was changed). */
export async function settleDelivery(sqlPool: SqlPool, o: DeliveryOutcome): Promise<boolean> {
  const [row] = await SETTLE.run(sqlPool, o);
  return Boolean(row?.paused);
}

// When the tenant's next delivery is due (its receivers enabled and not paused), in epoch ms.
const NEXT_DUE = statement<{ tenantId: string }>()('liya_event_next_due', (p) =>
  build
    .selectFrom('event_deliveries as d')
    .innerJoin('event_subscriptions as s', 's.id', 'd.subscription_id')
    .select(sql<number | null>`(extract(epoch from min(d.next_attempt_at)) * 1000)::float8`.as('due_ms'))
    .where('d.tenant_id', '=', p.tenantId)
    .where('d.status', '=', sql.lit('pending'))
    .where('s.enabled', '=', sql.lit(true))
    .where('s.paused_at', 'is', null),
);

export async function nextDueDelivery(sqlPool: SqlPool, tenantId: string): Promise<number | null> {
  const [row] = await NEXT_DUE.run(sqlPool, { tenantId });
  return row?.due_ms ?? null;
}

/** Queues the tenant's delivery job at `runAt` (now when absent). */
export async function queueDeliveries(sqlPool: SqlPool, tenantId: string, runAt?: Date): Promise<void> {
  await enqueueWith(sqlPool, deliverEventsJob, { tenant_id: tenantId }, { runAt });
}

/** The same, in the caller's unit of work. */
export async function queueDeliveriesIn(em: EntityManager, tenantId: string): Promise<void> {
  await enqueue(em, deliverEventsJob, { tenant_id: tenantId });
}

/** Makes a subscription's pending deliveries due now (it was resumed or enabled again). */
export async function makePendingDue(em: EntityManager, tenantId: string, subscriptionId: string): Promise<number> {
  const result = await kyselyOf(em)
    .updateTable('event_deliveries')
    .set({ next_attempt_at: sql`now()` })
    .where('tenant_id', '=', tenantId)
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * A new delivery of the event to each of `subscriptionIds` (its own attempts, the same webhook-id):
 * what a replay sends. Answers the deliveries made.
 */
export async function insertReplays(em: EntityManager, tenantId: string, eventId: string, subscriptionIds: string[]): Promise<{ id: string; subscription_id: string }[]> {
  if (subscriptionIds.length === 0) return [];
  return kyselyOf(em)
    .insertInto('event_deliveries')
    .columns(['tenant_id', 'event_id', 'subscription_id', 'status', 'attempts', 'next_attempt_at', 'created_at'])
    .expression((db) =>
      db
        .selectFrom('event_subscriptions as s')
        .select([sql.lit(tenantId).as('tenant_id'), sql.lit(eventId).as('event_id'), 's.id', sql.lit('pending').as('status'), sql.lit(0).as('attempts'), sql`now()`.as('n'), sql`now()`.as('c')])
        .where('s.tenant_id', '=', tenantId)
        .where('s.id', 'in', subscriptionIds),
    )
    .returning(['id', 'subscription_id'])
    .execute();
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  status_code: number | null;
  latency_ms: number;
  response_excerpt: string | null;
  error: string | null;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  subscription_id: string;
  status: string;
  attempts: number;
  next_attempt_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
  delivered_at: Date | null;
  /** Its attempts in order, read by the same statement: a delivery and its log are never seen at two moments. */
  attempt_log: AttemptRow[];
}

const deliveryColumns = [
  'd.id', 'd.event_id', 'e.type as event_type', 'd.subscription_id', 'd.status', 'd.attempts', 'd.next_attempt_at', 'd.last_status', 'd.last_error', 'd.created_at', 'd.delivered_at',
  // In the delivery's own statement: read apart, an attempt settled between the two reads showed a
  // delivery still pending with its successful attempt already logged.
  sql<AttemptRow[]>`coalesce((select jsonb_agg(jsonb_build_object('delivery_id', a.delivery_id, 'attempt', a.attempt, 'status_code', a.status_code,
    'latency_ms', a.latency_ms, 'response_excerpt', a.response_excerpt, 'error', a.error, 'created_at', a.created_at) order by a.attempt)
    from event_delivery_attempts a where a.delivery_id = d.id and a.tenant_id = d.tenant_id), '[]'::jsonb)`.as('attempt_log'),
] as const;

/** A subscription's deliveries, newest first, after the cursor (created_at, id). */
export async function listSubscriptionDeliveries(
  em: EntityManager, tenantId: string, subscriptionId: string, limit: number, after: { time: string; id: string } | null, status?: string,
): Promise<(DeliveryRow & { cursor_time: string })[]> {
  let query = kyselyOf(em)
    .selectFrom('event_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select([...deliveryColumns, sql<string>`to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('cursor_time')])
    .where('d.tenant_id', '=', tenantId)
    .where('d.subscription_id', '=', subscriptionId);
  if (status) query = query.where('d.status', '=', status);
  if (after) query = query.where(sql<boolean>`(d.created_at, d.id) < (${after.time}::timestamptz, ${after.id}::uuid)`);
  return (await query.orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(limit).execute()) as (DeliveryRow & { cursor_time: string })[];
}

/** An event's deliveries (one per subscription, and one per replay). */
export async function listEventDeliveries(em: EntityManager, tenantId: string, eventId: string): Promise<DeliveryRow[]> {
  return (await kyselyOf(em)
    .selectFrom('event_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select(deliveryColumns)
    .where('d.tenant_id', '=', tenantId)
    .where('d.event_id', '=', eventId)
    .orderBy('d.created_at')
    .execute()) as DeliveryRow[];
}

