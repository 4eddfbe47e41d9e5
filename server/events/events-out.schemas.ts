// Wire shapes of events out: subscriptions, the catalogue, recorded events, deliveries and attempts.
import { z } from 'zod';
import { bodyBoolean, bodyInt } from '../common/schemas.js';
import { EVENT_TYPE_NAMES } from './event-catalogue.js';

const eventTypeEnum = z.enum(EVENT_TYPE_NAMES as [string, ...string[]]);

const urlField = z
  .string()
  .max(2048)
  .url()
  .refine((u) => /^https?:\/\//i.test(u), 'Use an http or https URL')
  .describe('Where deliveries are POSTed. Sent through the server\'s outbound client: private, loopback and metadata addresses are refused unless the operator allows them (OUTBOUND_ALLOWED_HOSTS); such a delivery fails with the reason in its attempt log.');

const eventTypesField = z
  .array(eventTypeEnum)
  .min(1)
  .max(EVENT_TYPE_NAMES.length)
  .transform((list) => [...new Set(list)])
  .nullable()
  .describe('The event types wanted; null or absent: every type except the opt-in ones (intent.run.completed), which a subscription must name');

const filterSchema = z
  .object({
    domain: z.string().min(1).max(100).nullable().optional().describe('Only events of this domain (intent runs, eval runs)'),
    workflow_id: z.string().min(1).max(64).nullable().optional().describe('Only events of this workflow (its runs and approvals)'),
    agent_key: z.string().min(1).max(100).nullable().optional().describe('Only events of this agent (its runs, budget)'),
  })
  .strict()
  .describe('A filter: each field given keeps only the events that carry it with that value (an event type without the field, e.g. key.created under a workflow_id filter, is not delivered)')
  .meta({ id: 'EventSubscriptionFilter' });

export const subscriptionSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(z.string()).nullable().describe('null: every type but the opt-in ones'),
    filter: z.object({ domain: z.string().nullable(), workflow_id: z.string().nullable(), agent_key: z.string().nullable() }),
    enabled: z.boolean(),
    status: z
      .enum(['active', 'disabled', 'paused'])
      .describe('active; disabled (by its owner: no new deliveries); paused (by the server, see paused_reason: new events are still kept for it and sent once it is resumed)'),
    paused_at: z.string().nullable(),
    paused_reason: z.string().nullable(),
    failed_deliveries: z.number().int().describe('Deliveries in a row that used every attempt without success; reset by any success'),
    previous_secret_expires_at: z.string().nullable().describe('While set and in the future, deliveries are signed with the previous secret too'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'EventSubscription' });
export type SubscriptionDto = z.infer<typeof subscriptionSchema>;

export const createSubscriptionInput = z
  .object({
    url: urlField,
    description: z.string().max(500).nullable().optional(),
    event_types: eventTypesField.optional(),
    filter: filterSchema.optional(),
    enabled: bodyBoolean().optional().describe('Default true'),
  })
  .strict()
  .meta({ id: 'CreateEventSubscriptionRequest' });
export type CreateSubscriptionInput = z.infer<typeof createSubscriptionInput>;

export const createdSubscriptionSchema = z
  .object({
    subscription: subscriptionSchema,
    secret: z.string().describe('The signing secret (`whsec_` + base64 of 32 bytes). Shown once: store it now.'),
  })
  .meta({ id: 'CreatedEventSubscription' });

const subscriptionId = z.object({ subscriptionId: z.string().min(1).max(64).describe('The subscription id (another tenant\'s, or a malformed one, is 404)') });

export const subscriptionIdInput = subscriptionId;

export const updateSubscriptionInput = subscriptionId
  .extend({
    url: urlField.optional(),
    description: z.string().max(500).nullable().optional(),
    event_types: eventTypesField.optional(),
    filter: filterSchema.nullable().optional().describe('Replaces the whole filter; null removes it'),
    enabled: bodyBoolean().optional().describe('false: no new deliveries (pending ones wait); true again: they are sent, and a pause is cleared'),
  })
  .strict()
  .meta({ id: 'UpdateEventSubscriptionRequest' });
export type UpdateSubscriptionInput = z.infer<typeof updateSubscriptionInput>;

export const rotateSubscriptionSecretInput = subscriptionId
  .extend({
    grace_period_seconds: bodyInt(0, 7 * 24 * 3600)
      .default(24 * 3600)
      .describe('How long deliveries are signed with the old secret too (two signatures in webhook-signature), default 24 h, at most 7 days; 0: the old one stops at once'),
  })
  .strict()
  .meta({ id: 'RotateEventSubscriptionSecretRequest' });

export const rotatedSecretSchema = z.object({
  subscription: subscriptionSchema,
  secret: z.string().describe('The new signing secret. Shown once.'),
});

export const subscriptionListSchema = z.object({ subscriptions: z.array(subscriptionSchema) });

export const testDeliverySchema = z
  .object({
    event_id: z.string().describe('The event.test recorded: GET /v1/events/{eventId} shows its delivery and attempts'),
    delivery_id: z.string(),
  })
  .meta({ id: 'EventTestDelivery' });

export const eventTypeSchema = z
  .object({
    type: z.string(),
    version: z.number().int(),
    description: z.string(),
    filters: z.array(z.string()).describe('The subscription filter fields this type carries'),
    opt_in: z.boolean().describe('Delivered only to subscriptions that name it'),
    schema: z.record(z.string(), z.unknown()).describe('The JSON Schema of the delivery body (also under `webhooks` in this document)'),
  })
  .meta({ id: 'EventType' });

export const eventTypeListSchema = z.object({ types: z.array(eventTypeSchema) });

export const eventSchema = z
  .object({
    id: z.string().describe('Also the webhook-id of every delivery of it'),
    type: z.string(),
    version: z.number().int(),
    timestamp: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Event' });

const cursorField = z.string().max(200).optional().describe('next_cursor of the previous page');
const limitField = z.coerce.number().int().min(1).max(100).default(50).describe('Rows per page (1-100, default 50)');

export const listEventsInput = z.object({
  type: eventTypeEnum.optional(),
  limit: limitField,
  cursor: cursorField,
});

export const eventListSchema = z.object({
  events: z.array(eventSchema),
  next_cursor: z.string().nullable().describe('Pass as cursor for the next page; null: no more'),
});

export const attemptSchema = z
  .object({
    attempt: z.number().int(),
    status_code: z.number().int().nullable().describe('The receiver\'s HTTP status; null when none came'),
    latency_ms: z.number().int(),
    response_excerpt: z.string().nullable().describe('The first 500 characters of the answer'),
    error: z.string().nullable().describe('Why the attempt failed (a status, a time-out, a refused address)'),
    at: z.string(),
  })
  .meta({ id: 'EventDeliveryAttempt' });

export const deliverySchema = z
  .object({
    id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    subscription_id: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    next_attempt_at: z.string().nullable(),
    last_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    delivered_at: z.string().nullable(),
    attempt_log: z.array(attemptSchema),
  })
  .meta({ id: 'EventDelivery' });

export const eventDetailSchema = z.object({ event: eventSchema, deliveries: z.array(deliverySchema) });

export const eventIdInput = z.object({ eventId: z.string().min(1).max(40).describe('The event id (evt_…)') });

export const replayInput = eventIdInput
  .extend({
    subscription_id: z.string().min(1).max(64).optional().describe('Replay to this subscription only (any of the tenant\'s); absent: to every subscription that had a delivery of the event'),
  })
  .strict()
  .meta({ id: 'ReplayEventRequest' });

export const replaySchema = z.object({
  deliveries: z.array(z.object({ id: z.string(), subscription_id: z.string() })).describe('The new deliveries: the same webhook-id, attempts of their own'),
});

export const listDeliveriesInput = subscriptionId.extend({
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
  limit: limitField,
  cursor: cursorField,
});

export const deliveryListSchema = z.object({
  deliveries: z.array(deliverySchema),
  next_cursor: z.string().nullable(),
});
