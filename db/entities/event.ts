import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

/**
 * Where a tenant wants its events sent: a URL, the event types (null: all), an optional filter and
 * a Standard Webhooks signing secret (encrypted; the previous one signs too until its grace ends).
 * A subscription the system paused (its deliveries kept failing) says why in `pausedReason`.
 */
export const EventSubscription = defineEntity({
  name: 'EventSubscription',
  tableName: 'event_subscriptions',
  indexes: [
    { name: 'event_subscriptions_tenant_id_created_at_index', expression: `create index "event_subscriptions_tenant_id_created_at_index" on "event_subscriptions" ("tenant_id", "created_at" desc, "id" desc)` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    url: p.string().length(2048),
    description: p.string().length(500).nullable(),
    /** null: every type. */
    eventTypes: p.json<string[]>().nullable(),
    filterDomain: p.string().length(100).nullable(),
    filterWorkflowId: p.string().length(64).nullable(),
    filterAgentKey: p.string().length(100).nullable(),
    secret: p.text(),
    previousSecret: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    enabled: p.boolean().default(true),
    pausedAt: p.datetime().nullable(),
    pausedReason: p.string().length(500).nullable(),
    /** Deliveries in a row that used every attempt without success (reset by any success). */
    failedDeliveries: p.integer().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

/**
 * What happened, recorded in the transaction of the change itself when a subscription of the
 * tenant wants it. `domain`, `workflowId` and `agentKey` are what subscriptions filter on.
 */
export const Event = defineEntity({
  name: 'Event',
  tableName: 'events',
  indexes: [
    { name: 'events_tenant_id_created_at_id_index', expression: `create index "events_tenant_id_created_at_id_index" on "events" ("tenant_id", "created_at" desc, "id" desc)` },
  ],
  properties: {
    id: p.string().length(40).primary(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    type: p.string().length(100),
    version: p.integer(),
    data: p.json<Record<string, unknown>>(),
    domain: p.string().length(100).nullable(),
    workflowId: p.string().length(64).nullable(),
    agentKey: p.string().length(100).nullable(),
    createdAt: p.datetime().defaultRaw('now()'),
  },
});

/** One event to one subscription: pending until delivered or out of attempts. */
export const EventDelivery = defineEntity({
  name: 'EventDelivery',
  tableName: 'event_deliveries',
  indexes: [
    // The runner's claim: a tenant's due deliveries, oldest first.
    {
      name: 'event_deliveries_pending_index',
      expression: `create index "event_deliveries_pending_index" on "event_deliveries" ("tenant_id", "next_attempt_at") where "status" = 'pending'`,
    },
    { name: 'event_deliveries_event_id_index', expression: `create index "event_deliveries_event_id_index" on "event_deliveries" ("event_id")` },
    { name: 'event_deliveries_subscription_id_created_at_index', expression: `create index "event_deliveries_subscription_id_created_at_index" on "event_deliveries" ("subscription_id", "created_at" desc, "id" desc)` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    event: () => p.manyToOne(Event).deleteRule('cascade'),
    subscription: () => p.manyToOne(EventSubscription).deleteRule('cascade'),
    /** pending | delivered | failed */
    status: p.string().length(16),
    attempts: p.integer().default(0),
    /** When the next attempt is due; a claimed delivery's lease end (a runner that dies leaves it due again). */
    nextAttemptAt: p.datetime().nullable(),
    lastStatus: p.integer().nullable(),
    lastError: p.string().length(500).nullable(),
    createdAt: p.datetime().defaultRaw('now()'),
    deliveredAt: p.datetime().nullable(),
  },
});

/** One HTTP attempt of a delivery: what the receiver answered, and how fast. */
export const EventDeliveryAttempt = defineEntity({
  name: 'EventDeliveryAttempt',
  tableName: 'event_delivery_attempts',
  indexes: [
    { name: 'event_delivery_attempts_delivery_id_index', expression: `create index "event_delivery_attempts_delivery_id_index" on "event_delivery_attempts" ("delivery_id", "attempt")` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    delivery: () => p.manyToOne(EventDelivery).deleteRule('cascade'),
    attempt: p.integer(),
    /** The receiver's HTTP status; null when none came (timeout, refused, blocked address). */
    statusCode: p.integer().nullable(),
    latencyMs: p.integer(),
    /** The first 500 characters of the answer. */
    responseExcerpt: p.string().length(500).nullable(),
    error: p.string().length(500).nullable(),
    createdAt: p.datetime().defaultRaw('now()'),
  },
});
