// events: what happened, for a tenant's subscriptions. The database triggers record the catalogue's
// events through liya_record_event (the events migrations), in the transaction of each change;
// this module reads them and records the one event no change makes: a subscription's test.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

export interface EventRow {
  id: string;
  type: string;
  version: number;
  data: Record<string, unknown>;
  created_at: Date;
  cursor_time: string;
}

const COLUMNS = ['id', 'type', 'version', 'data', 'created_at', sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('cursor_time')] as const;

/** A tenant's events, newest first, after the cursor (created_at, id), of one type when given. */
export async function listEvents(em: EntityManager, tenantId: string, limit: number, after: { time: string; id: string } | null, type?: string): Promise<EventRow[]> {
  let query = kyselyOf(em).selectFrom('events').select(COLUMNS).where('tenant_id', '=', tenantId);
  if (type) query = query.where('type', '=', type);
  if (after) query = query.where(sql<boolean>`(created_at, id) < (${after.time}::timestamptz, ${after.id}::text)`);
  return (await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()) as EventRow[];
}

export async function findEvent(em: EntityManager, tenantId: string, id: string): Promise<EventRow | undefined> {
  return (await kyselyOf(em).selectFrom('events').select(COLUMNS).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst()) as EventRow | undefined;
}

/** A new event id: `evt_` and 32 hex digits (the triggers make the same shape). */
export const newEventId = () => `evt_${randomUUID().replaceAll('-', '')}`;

/** Records an `event.test` for one subscription with its delivery (the caller queues the runner). */
export async function insertTestEvent(em: EntityManager, tenantId: string, subscriptionId: string, data: Record<string, unknown>): Promise<{ eventId: string; deliveryId: string }> {
  const eventId = newEventId();
  const db = kyselyOf(em);
  await db.insertInto('events').values({ id: eventId, tenant_id: tenantId, type: 'event.test', version: 1, data: sql`${JSON.stringify(data)}::jsonb`, created_at: sql`now()` }).execute();
  const delivery = await db
    .insertInto('event_deliveries')
    .values({ tenant_id: tenantId, event_id: eventId, subscription_id: subscriptionId, status: 'pending', attempts: 0, next_attempt_at: sql`now()`, created_at: sql`now()` })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { eventId, deliveryId: delivery.id };
}

/**
 * Deletes the tenant's events whose payload names the end user (`json`: the pattern of
 * server/common/mentions.ts over the payload's JSON text), with their deliveries and attempts.
 */
export async function deleteEventsMentioning(em: EntityManager, tenantId: string, patterns: { json: string }): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('events').where('tenant_id', '=', tenantId).where(sql<string>`data::text`, 'like', patterns.json).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
