// Event subscriptions: created, changed, tested, paused and resumed, rotated and deleted. The
// signing secret is a Standard Webhooks secret shown once and stored encrypted (deliveries must
// sign with it); a rotation keeps the previous one signing beside it for a grace period.
import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAuditNow } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, notFound } from '../errors.js';
import { encryptSecret, resolveEncryptionKey } from '../llm/secret-box.js';
import type { TenantScope } from '../tenants/tenant-scope.js';
import { limitsForPlan } from '../tenants/plan-limits.js';
import { subscriptionSecretContext } from './deliver-events.js';
import type { CreateSubscriptionInput, SubscriptionDto, UpdateSubscriptionInput } from './events-out.schemas.js';
import { makePendingDue, queueDeliveriesIn } from './store/event-deliveries.js';
import {
  countSubscriptions, deleteSubscription, findSubscription, insertSubscription, listSubscriptions, updateSubscription, type SubscriptionRow,
} from './store/event-subscriptions.js';
import { insertTestEvent } from './store/events.js';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export function toSubscriptionDto(row: SubscriptionRow): SubscriptionDto {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    filter: { domain: row.filter_domain, workflow_id: row.filter_workflow_id, agent_key: row.filter_agent_key },
    enabled: row.enabled,
    status: !row.enabled ? 'disabled' : row.paused_at ? 'paused' : 'active',
    paused_at: iso(row.paused_at),
    paused_reason: row.paused_reason,
    failed_deliveries: row.failed_deliveries,
    previous_secret_expires_at: row.previous_secret_expires_at && new Date(row.previous_secret_expires_at).getTime() > Date.now() ? isoRequired(row.previous_secret_expires_at) : null,
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

async function sealSecret(em: EntityManager, deps: AppDeps, tenantId: string, id: string, secret: string): Promise<string> {
  return encryptSecret(await resolveEncryptionKey(em, deps.config), secret, subscriptionSecretContext(tenantId, id));
}

/** The subscription, or 404 (another tenant's id answers the same). */
async function requireSubscription(em: EntityManager, tenantId: string, id: string, lock = false): Promise<SubscriptionRow> {
  const row = isUuid(id) ? await findSubscription(em, tenantId, id, lock) : undefined;
  if (!row) throw notFound('Event subscription');
  return row;
}

export async function listEventSubscriptions(em: EntityManager, tenantId: string) {
  return { subscriptions: (await listSubscriptions(em, tenantId)).map(toSubscriptionDto) };
}

export async function getEventSubscription(em: EntityManager, tenantId: string, id: string): Promise<SubscriptionDto> {
  return toSubscriptionDto(await requireSubscription(em, tenantId, id));
}

export async function createEventSubscription(em: EntityManager, deps: AppDeps, scope: Pick<TenantScope, "tenantId" | "plan">, actor: Actor, input: CreateSubscriptionInput) {
  const max = limitsForPlan(scope.plan, deps.config.PLAN_LIMITS).event_subscriptions;
  const id = randomUUID();
  const secret = newSecret();
  const sealed = await sealSecret(em, deps, scope.tenantId, id, secret);
  const row = await em.transactional(async (tx) => {
    // Counted without a lock: two creates at once may both pass, leaving one over the plan's bound,
    // which bounds work rather than accounts for it.
    const held = await countSubscriptions(tx, scope.tenantId);
    if (held >= max) {
      throw new AppError('EVENT_SUBSCRIPTION_LIMIT', `The plan allows ${max} event subscriptions; delete one first`, { limit: 'event_subscriptions', max });
    }
    let created = await insertSubscription(tx, {
      id,
      tenantId: scope.tenantId,
      url: input.url,
      description: input.description ?? null,
      eventTypes: input.event_types ?? null,
      filterDomain: input.filter?.domain ?? null,
      filterWorkflowId: input.filter?.workflow_id ?? null,
      filterAgentKey: input.filter?.agent_key ?? null,
      secret: sealed,
    });
    if (input.enabled === false) created = (await updateSubscription(tx, scope.tenantId, id, { enabled: false }))!;
    await recordAuditNow(tx, scope.tenantId, actor, { action: 'event_subscription.create', targetType: 'event_subscription', targetId: id, details: { url: input.url, event_types: input.event_types ?? null } });
    return created;
  });
  return { subscription: toSubscriptionDto(row), secret };
}

export async function updateEventSubscription(em: EntityManager, tenantId: string, actor: Actor, input: UpdateSubscriptionInput): Promise<SubscriptionDto> {
  return em.transactional(async (tx) => {
    const before = await requireSubscription(tx, tenantId, input.subscriptionId, true);
    const filter = input.filter === null ? { domain: null, workflow_id: null, agent_key: null } : input.filter;
    const turnedOn = input.enabled === true && (!before.enabled || before.paused_at !== null);
    const row = (await updateSubscription(tx, tenantId, before.id, {
      url: input.url,
      description: input.description,
      eventTypes: input.event_types,
      filterDomain: filter === undefined ? undefined : (filter.domain ?? null),
      filterWorkflowId: filter === undefined ? undefined : (filter.workflow_id ?? null),
      filterAgentKey: filter === undefined ? undefined : (filter.agent_key ?? null),
      enabled: input.enabled,
      resume: turnedOn,
    }))!;
    if (turnedOn) await resumeDeliveries(tx, tenantId, row.id);
    const changed = Object.keys(input).filter((field) => field !== 'subscriptionId');
    await recordAuditNow(tx, tenantId, actor, { action: 'event_subscription.update', targetType: 'event_subscription', targetId: row.id, details: { changes: changed } });
    return toSubscriptionDto(row);
  });
}

/** Clears a pause: the pending deliveries (kept while paused) are sent now. */
export async function resumeEventSubscription(em: EntityManager, tenantId: string, actor: Actor, id: string): Promise<SubscriptionDto> {
  return em.transactional(async (tx) => {
    const before = await requireSubscription(tx, tenantId, id, true);
    const row = (await updateSubscription(tx, tenantId, before.id, { resume: true, enabled: true }))!;
    await resumeDeliveries(tx, tenantId, row.id);
    await recordAuditNow(tx, tenantId, actor, { action: 'event_subscription.resume', targetType: 'event_subscription', targetId: row.id, details: { paused_reason: before.paused_reason } });
    return toSubscriptionDto(row);
  });
}

async function resumeDeliveries(tx: EntityManager, tenantId: string, subscriptionId: string) {
  if ((await makePendingDue(tx, tenantId, subscriptionId)) > 0) await queueDeliveriesIn(tx, tenantId);
}

export async function rotateEventSubscriptionSecret(em: EntityManager, deps: AppDeps, tenantId: string, actor: Actor, id: string, graceSeconds: number) {
  const secret = newSecret();
  const sealed = await sealSecret(em, deps, tenantId, id, secret);
  const row = await em.transactional(async (tx) => {
    const before = await requireSubscription(tx, tenantId, id, true);
    const row = (await updateSubscription(tx, tenantId, before.id, {
      secret: sealed,
      previousSecret: graceSeconds > 0 ? before.secret : null,
      previousSecretExpiresAt: graceSeconds > 0 ? new Date(Date.now() + graceSeconds * 1000) : null,
    }))!;
    await recordAuditNow(tx, tenantId, actor, { action: 'event_subscription.rotate_secret', targetType: 'event_subscription', targetId: row.id, details: { grace_period_seconds: graceSeconds } });
    return row;
  });
  return { subscription: toSubscriptionDto(row), secret };
}

export async function deleteEventSubscription(em: EntityManager, tenantId: string, actor: Actor, id: string): Promise<void> {
  await em.transactional(async (tx) => {
    const row = await requireSubscription(tx, tenantId, id, true);
    await deleteSubscription(tx, tenantId, row.id);
    await recordAuditNow(tx, tenantId, actor, { action: 'event_subscription.delete', targetType: 'event_subscription', targetId: row.id, details: { url: row.url } });
  });
}

/** Sends an `event.test` to the subscription (even a paused or disabled one: it waits until resumed). */
export async function testEventSubscription(em: EntityManager, tenantId: string, id: string): Promise<{ event_id: string; delivery_id: string }> {
  return em.transactional(async (tx) => {
    const row = await requireSubscription(tx, tenantId, id);
    const { eventId, deliveryId } = await insertTestEvent(tx, tenantId, row.id, { subscription_id: row.id, message: 'A test event from Liya: the receiver and its signature check work.' });
    await queueDeliveriesIn(tx, tenantId);
    return { event_id: eventId, delivery_id: deliveryId };
  });
}
