import { envelope, ok, okEmpty } from '../common/schemas.js';
import { notFound } from '../errors.js';
import { loadTenantScope } from '../tenants/tenant-scope.js';
import { apiKeyProcedure, dashboardProcedure, router } from '../trpc.js';
import { getTenantEvent, listDeliveries, listEventTypes, listTenantEvents, replayEvent } from './event-log.service.js';
import {
  createEventSubscription, deleteEventSubscription, getEventSubscription, listEventSubscriptions, resumeEventSubscription, rotateEventSubscriptionSecret,
  testEventSubscription, updateEventSubscription,
} from './event-subscriptions.service.js';
import {
  createdSubscriptionSchema, createSubscriptionInput, deliveryListSchema, eventDetailSchema, eventIdInput, eventListSchema, eventTypeListSchema,
  listDeliveriesInput, listEventsInput, replayInput, replaySchema, rotatedSecretSchema, rotateSubscriptionSecretInput, subscriptionIdInput,
  subscriptionListSchema, subscriptionSchema, testDeliverySchema, updateSubscriptionInput,
} from './events-out.schemas.js';
import { z } from 'zod';

const TAGS = ['Events out'];
const SUBS = '/v1/event-subscriptions';
const DASH = '/dashboard/event-subscriptions';

const DELIVERY_NOTE = `Deliveries are Standard Webhooks v1 messages: a POST with the JSON body \`{id, type, version, timestamp, tenant_id, data}\` and the headers \`webhook-id\` (the event id: the same on every attempt and replay, so deduplicate on it), \`webhook-timestamp\` (seconds) and \`webhook-signature\` (\`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">\` keyed with the base64-decoded part of the secret after \`whsec_\`; during a rotation's grace, two signatures separated by a space). Any 2xx answer is a delivery; anything else, or no answer within EVENT_DELIVERY_TIMEOUT_MS (15 s), is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (EVENT_RETRY_SCHEDULE; a longer Retry-After is honoured, up to a day): 8 attempts over about 27.6 hours, then the delivery is failed. After 3 failed deliveries in a row (EVENT_PAUSE_AFTER_FAILED_DELIVERIES), or at once on 410 Gone, the subscription is paused with the reason; events keep being kept for it, and resuming it sends them. Events are recorded in the transaction of the change that caused them: a change rolled back has none, a committed one is delivered even when the server is killed right after.`;

const dashboardPlan = async (deps: Parameters<typeof loadTenantScope>[0], tenantId: string) => {
  const scope = await loadTenantScope(deps, tenantId);
  if (!scope) throw notFound('Tenant');
  return scope;
};

export const eventSubscriptionsRouter = router({
  listEventTypes: apiKeyProcedure('events:read')
    .meta({ openapi: { method: 'GET', path: '/v1/event-types', tags: TAGS, summary: 'The event catalogue: every type, its version, filters and the JSON Schema of its delivery body' } })
    .input(z.object({}))
    .output(ok(eventTypeListSchema))
    .query(() => envelope(listEventTypes())),

  listSubscriptions: apiKeyProcedure('events:read')
    .meta({ openapi: { method: 'GET', path: SUBS, tags: TAGS, summary: 'The tenant\'s event subscriptions (secrets are never shown again)' } })
    .input(z.object({}))
    .output(ok(subscriptionListSchema))
    .query(async ({ ctx }) => envelope(await listEventSubscriptions(ctx.em, ctx.tenantId))),

  createSubscription: apiKeyProcedure('events:write')
    .meta({
      openapi: { method: 'POST', path: SUBS, tags: TAGS, summary: 'Subscribe a URL to events; answers the signing secret once', description: DELIVERY_NOTE },
      successStatus: 201,
      errors: ['EVENT_SUBSCRIPTION_LIMIT'],
    })
    .input(createSubscriptionInput)
    .output(ok(createdSubscriptionSchema))
    .mutation(async ({ ctx, input }) => envelope(await createEventSubscription(ctx.em, ctx.deps, ctx.scope, ctx.actor, input))),

  getSubscription: apiKeyProcedure('events:read')
    .meta({ openapi: { method: 'GET', path: `${SUBS}/{subscriptionId}`, tags: TAGS, summary: 'One event subscription' }, errors: ['NOT_FOUND'] })
    .input(subscriptionIdInput)
    .output(ok(subscriptionSchema))
    .query(async ({ ctx, input }) => envelope(await getEventSubscription(ctx.em, ctx.tenantId, input.subscriptionId))),

  updateSubscription: apiKeyProcedure('events:write')
    .meta({ openapi: { method: 'PATCH', path: `${SUBS}/{subscriptionId}`, tags: TAGS, summary: 'Change a subscription: URL, types, filter, enabled (enabling clears a pause)' }, errors: ['NOT_FOUND'] })
    .input(updateSubscriptionInput)
    .output(ok(subscriptionSchema))
    .mutation(async ({ ctx, input }) => envelope(await updateEventSubscription(ctx.em, ctx.tenantId, ctx.actor, input))),

  deleteSubscription: apiKeyProcedure('events:write')
    .meta({ openapi: { method: 'DELETE', path: `${SUBS}/{subscriptionId}`, tags: TAGS, summary: 'Delete a subscription with its deliveries' }, errors: ['NOT_FOUND'] })
    .input(subscriptionIdInput)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteEventSubscription(ctx.em, ctx.tenantId, ctx.actor, input.subscriptionId);
      return { success: true as const };
    }),

  rotateSecret: apiKeyProcedure('events:write')
    .meta({ openapi: { method: 'POST', path: `${SUBS}/{subscriptionId}/rotate-secret`, tags: TAGS, summary: 'A new signing secret (shown once); the old one keeps signing beside it for the grace period' }, errors: ['NOT_FOUND'] })
    .input(rotateSubscriptionSecretInput)
    .output(ok(rotatedSecretSchema))
    .mutation(async ({ ctx, input }) => envelope(await rotateEventSubscriptionSecret(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.subscriptionId, input.grace_period_seconds))),

  resumeSubscription: apiKeyProcedure('events:write')
    .meta({ openapi: { method: 'POST', path: `${SUBS}/{subscriptionId}/resume`, tags: TAGS, summary: 'Resume a paused (or disabled) subscription: the deliveries kept meanwhile are sent now' }, errors: ['NOT_FOUND'] })
    .input(subscriptionIdInput)
    .output(ok(subscriptionSchema))
    .mutation(async ({ ctx, input }) => envelope(await resumeEventSubscription(ctx.em, ctx.tenantId, ctx.actor, input.subscriptionId))),

  testSubscription: apiKeyProcedure('events:write')
    .meta({
      openapi: { method: 'POST', path: `${SUBS}/{subscriptionId}/test`, tags: TAGS, summary: 'Send an event.test to this subscription; follow it with GET /v1/events/{eventId}' },
      successStatus: 202,
      errors: ['NOT_FOUND'],
    })
    .input(subscriptionIdInput)
    .output(ok(testDeliverySchema))
    .mutation(async ({ ctx, input }) => envelope(await testEventSubscription(ctx.em, ctx.tenantId, input.subscriptionId))),

  listDeliveries: apiKeyProcedure('events:read')
    .meta({ openapi: { method: 'GET', path: `${SUBS}/{subscriptionId}/deliveries`, tags: TAGS, summary: 'A subscription\'s deliveries with every attempt (status, latency, answer excerpt), newest first' }, errors: ['NOT_FOUND'] })
    .input(listDeliveriesInput)
    .output(ok(deliveryListSchema))
    .query(async ({ ctx, input }) => envelope(await listDeliveries(ctx.em, ctx.tenantId, input))),

  listEvents: apiKeyProcedure('events:read')
    .meta({ openapi: { method: 'GET', path: '/v1/events', tags: TAGS, summary: 'Recorded events, newest first (only those a subscription wanted when they happened)' } })
    .input(listEventsInput)
    .output(ok(eventListSchema))
    .query(async ({ ctx, input }) => envelope(await listTenantEvents(ctx.em, ctx.tenantId, input))),

  getEvent: apiKeyProcedure('events:read')
    .meta({ openapi: { method: 'GET', path: '/v1/events/{eventId}', tags: TAGS, summary: 'One event with its deliveries and their attempts' }, errors: ['NOT_FOUND'] })
    .input(eventIdInput)
    .output(ok(eventDetailSchema))
    .query(async ({ ctx, input }) => envelope(await getTenantEvent(ctx.em, ctx.tenantId, input.eventId))),

  replayEvent: apiKeyProcedure('events:write')
    .meta({ openapi: { method: 'POST', path: '/v1/events/{eventId}/replay', tags: TAGS, summary: 'Send an event again (same webhook-id), to one subscription or to every one that had it' }, successStatus: 202, errors: ['NOT_FOUND'] })
    .input(replayInput)
    .output(ok(replaySchema))
    .mutation(async ({ ctx, input }) => envelope(await replayEvent(ctx.em, ctx.tenantId, ctx.actor, input.eventId, input.subscription_id))),

  dashboardListSubscriptions: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: DASH, tags: TAGS, summary: 'The tenant\'s event subscriptions' } })
    .input(z.object({}))
    .output(ok(subscriptionListSchema))
    .query(async ({ ctx }) => envelope(await listEventSubscriptions(ctx.em, ctx.tenantId))),

  dashboardCreateSubscription: dashboardProcedure('admin')
    .meta({ openapi: { method: 'POST', path: DASH, tags: TAGS, summary: 'Subscribe a URL to events (owner/admin); answers the signing secret once', description: DELIVERY_NOTE }, successStatus: 201, errors: ['EVENT_SUBSCRIPTION_LIMIT'] })
    .input(createSubscriptionInput)
    .output(ok(createdSubscriptionSchema))
    .mutation(async ({ ctx, input }) => envelope(await createEventSubscription(ctx.em, ctx.deps, await dashboardPlan(ctx.deps.sql, ctx.tenantId), ctx.actor, input))),

  dashboardUpdateSubscription: dashboardProcedure('admin')
    .meta({ openapi: { method: 'PATCH', path: `${DASH}/{subscriptionId}`, tags: TAGS, summary: 'Change a subscription (owner/admin)' }, errors: ['NOT_FOUND'] })
    .input(updateSubscriptionInput)
    .output(ok(subscriptionSchema))
    .mutation(async ({ ctx, input }) => envelope(await updateEventSubscription(ctx.em, ctx.tenantId, ctx.actor, input))),

  dashboardDeleteSubscription: dashboardProcedure('admin')
    .meta({ openapi: { method: 'DELETE', path: `${DASH}/{subscriptionId}`, tags: TAGS, summary: 'Delete a subscription (owner/admin)' }, errors: ['NOT_FOUND'] })
    .input(subscriptionIdInput)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteEventSubscription(ctx.em, ctx.tenantId, ctx.actor, input.subscriptionId);
      return { success: true as const };
    }),

  dashboardRotateSecret: dashboardProcedure('admin')
    .meta({ openapi: { method: 'POST', path: `${DASH}/{subscriptionId}/rotate-secret`, tags: TAGS, summary: 'A new signing secret (owner/admin; shown once)' }, errors: ['NOT_FOUND'] })
    .input(rotateSubscriptionSecretInput)
    .output(ok(rotatedSecretSchema))
    .mutation(async ({ ctx, input }) => envelope(await rotateEventSubscriptionSecret(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.subscriptionId, input.grace_period_seconds))),
});
