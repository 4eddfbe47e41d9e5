// The event log: the catalogue, recorded events with their deliveries and attempts, and replays.
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAuditNow } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import { invalidInput, notFound } from '../errors.js';
import { EVENT_TYPES, EVENT_TYPE_NAMES, EVENT_VERSION, eventBodyJsonSchema } from './event-catalogue.js';
import {
  insertReplays, listEventDeliveries, listSubscriptionDeliveries, queueDeliveriesIn, type DeliveryRow,
} from './store/event-deliveries.js';
import { findSubscription } from './store/event-subscriptions.js';
import { deleteEventsMentioning, findEvent, listEvents, type EventRow } from './store/events.js';

let catalogue: { types: ReturnType<typeof describeType>[] } | null = null;

function describeType(type: (typeof EVENT_TYPE_NAMES)[number]) {
  const spec = EVENT_TYPES[type];
  return {
    type,
    version: EVENT_VERSION,
    description: spec.description,
    filters: [...spec.filters],
    opt_in: 'optIn' in spec && spec.optIn === true,
    schema: eventBodyJsonSchema(type),
  };
}

export function listEventTypes() {
  catalogue ??= { types: EVENT_TYPE_NAMES.map(describeType) };
  return catalogue;
}

const toEventDto = (row: EventRow) => ({ id: row.id, type: row.type, version: row.version, timestamp: isoRequired(row.created_at), data: row.data });

// A cursor is the last row's exact time and id, base64url: opaque to clients, checked when read.
const encodeCursor = (time: string, id: string) => Buffer.from(`${time}|${id}`, 'utf8').toString('base64url');
function decodeCursor(cursor: string | undefined, idShape: (id: string) => boolean): { time: string; id: string } | null {
  if (!cursor) return null;
  const [time, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (extra !== undefined || !time || !id || Number.isNaN(Date.parse(time)) || !idShape(id)) {
    throw invalidInput('The cursor is malformed or belongs to another list', [{ path: 'cursor', message: 'pass next_cursor of the previous page' }]);
  }
  return { time, id };
}
const isEventId = (id: string) => /^evt_[0-9a-f]{32}$/.test(id);

export async function listTenantEvents(em: EntityManager, tenantId: string, query: { type?: string; limit: number; cursor?: string }) {
  const rows = await listEvents(em, tenantId, query.limit + 1, decodeCursor(query.cursor, isEventId), query.type);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return { events: page.map(toEventDto), next_cursor: rows.length > query.limit && last ? encodeCursor(last.cursor_time, last.id) : null };
}

function withAttempts(deliveries: DeliveryRow[]) {
  return deliveries.map((d) => ({
    id: d.id,
    event_id: d.event_id,
    event_type: d.event_type,
    subscription_id: d.subscription_id,
    status: d.status as 'pending' | 'delivered' | 'failed',
    attempts: d.attempts,
    next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    last_status: d.last_status,
    last_error: d.last_error,
    created_at: isoRequired(d.created_at),
    delivered_at: iso(d.delivered_at),
    attempt_log: d.attempt_log.map((a) => ({
      attempt: a.attempt, status_code: a.status_code, latency_ms: a.latency_ms, response_excerpt: a.response_excerpt, error: a.error, at: isoRequired(a.created_at),
    })),
  }));
}

async function requireEvent(em: EntityManager, tenantId: string, eventId: string): Promise<EventRow> {
  const row = isEventId(eventId) ? await findEvent(em, tenantId, eventId) : undefined;
  if (!row) throw notFound('Event');
  return row;
}

export async function getTenantEvent(em: EntityManager, tenantId: string, eventId: string) {
  const event = await requireEvent(em, tenantId, eventId);
  const deliveries = await listEventDeliveries(em, tenantId, event.id);
  return { event: toEventDto(event), deliveries: withAttempts(deliveries) };
}

export async function listDeliveries(em: EntityManager, tenantId: string, query: { subscriptionId: string; status?: string; limit: number; cursor?: string }) {
  const subscription = isUuid(query.subscriptionId) ? await findSubscription(em, tenantId, query.subscriptionId) : undefined;
  if (!subscription) throw notFound('Event subscription');
  const rows = await listSubscriptionDeliveries(em, tenantId, subscription.id, query.limit + 1, decodeCursor(query.cursor, isUuid), query.status);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    deliveries: withAttempts(page),
    next_cursor: rows.length > query.limit && last ? encodeCursor(last.cursor_time, last.id) : null,
  };
}

/**
 * Sends an event again: a new delivery to one subscription, or to every subscription that had one
 * (the same webhook-id, so a receiver that kept it drops the repeat; one that lost it takes it).
 */
export async function replayEvent(em: EntityManager, tenantId: string, actor: Actor, eventId: string, subscriptionId?: string) {
  return em.transactional(async (tx) => {
    const event = await requireEvent(tx, tenantId, eventId);
    let targets: string[];
    if (subscriptionId) {
      if (!isUuid(subscriptionId) || !(await findSubscription(tx, tenantId, subscriptionId))) throw notFound('Event subscription');
      targets = [subscriptionId];
    } else {
      targets = [...new Set((await listEventDeliveries(tx, tenantId, event.id)).map((d) => d.subscription_id))];
    }
    const deliveries = await insertReplays(tx, tenantId, event.id, targets);
    if (deliveries.length) await queueDeliveriesIn(tx, tenantId);
    await recordAuditNow(tx, tenantId, actor, { action: 'event.replay', targetType: 'event', targetId: event.id, details: { subscriptions: targets } });
    return { deliveries };
  });
}

/** Erasure: deletes the events whose payload names the end user (an approval's message, say). */
export function forgetEventsAbout(em: EntityManager, tenantId: string, patterns: { json: string }): Promise<number> {
  return deleteEventsMentioning(em, tenantId, patterns);
}
