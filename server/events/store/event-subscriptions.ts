// event_subscriptions: where a tenant's events go. Written here alone (the delivery runner's
// failure counting and pausing included, through event-deliveries.ts's outcome statement, which
// names this table in the same statement as the delivery it settles).
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

export interface SubscriptionRow {
  id: string;
  tenant_id: string;
  url: string;
  description: string | null;
  event_types: string[] | null;
  filter_domain: string | null;
  filter_workflow_id: string | null;
  filter_agent_key: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  enabled: boolean;
  paused_at: Date | null;
  paused_reason: string | null;
  failed_deliveries: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = [
  'id', 'tenant_id', 'url', 'description', 'event_types', 'filter_domain', 'filter_workflow_id', 'filter_agent_key', 'secret',
  'previous_secret', 'previous_secret_expires_at', 'enabled', 'paused_at', 'paused_reason', 'failed_deliveries', 'created_at', 'updated_at',
] as const;

export interface NewSubscription {
  id: string;
  tenantId: string;
  url: string;
  description: string | null;
  eventTypes: string[] | null;
  filterDomain: string | null;
  filterWorkflowId: string | null;
  filterAgentKey: string | null;
  secret: string;
}

export async function insertSubscription(em: EntityManager, row: NewSubscription): Promise<SubscriptionRow> {
  return (await kyselyOf(em)
    .insertInto('event_subscriptions')
    .values({
      id: row.id,
      tenant_id: row.tenantId,
      url: row.url,
      description: row.description,
      event_types: row.eventTypes === null ? null : sql`${JSON.stringify(row.eventTypes)}::jsonb`,
      filter_domain: row.filterDomain,
      filter_workflow_id: row.filterWorkflowId,
      filter_agent_key: row.filterAgentKey,
      secret: row.secret,
      enabled: true,
      failed_deliveries: 0,
      created_at: sql`now()`,
      updated_at: sql`now()`,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow()) as SubscriptionRow;
}

/** A tenant's subscriptions, newest first (a plan holds a few dozen at most: no paging). */
export async function listSubscriptions(em: EntityManager, tenantId: string): Promise<SubscriptionRow[]> {
  return (await kyselyOf(em).selectFrom('event_subscriptions').select(COLUMNS).where('tenant_id', '=', tenantId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute()) as SubscriptionRow[];
}

export async function countSubscriptions(em: EntityManager, tenantId: string): Promise<number> {
  const row = await kyselyOf(em).selectFrom('event_subscriptions').select(sql<number>`count(*)::int`.as('n')).where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
  return row.n;
}

/** The subscription, locked for the caller's transaction when `lock`. */
export async function findSubscription(em: EntityManager, tenantId: string, id: string, lock = false): Promise<SubscriptionRow | undefined> {
  let query = kyselyOf(em).selectFrom('event_subscriptions').select(COLUMNS).where('tenant_id', '=', tenantId).where('id', '=', id);
  if (lock) query = query.forUpdate();
  return (await query.executeTakeFirst()) as SubscriptionRow | undefined;
}

export interface SubscriptionChanges {
  url?: string;
  description?: string | null;
  eventTypes?: string[] | null;
  filterDomain?: string | null;
  filterWorkflowId?: string | null;
  filterAgentKey?: string | null;
  enabled?: boolean;
  /** Clears a pause (and its failure count): the receiver is trusted again. */
  resume?: boolean;
  secret?: string;
  previousSecret?: string | null;
  previousSecretExpiresAt?: Date | null;
}

export async function updateSubscription(em: EntityManager, tenantId: string, id: string, changes: SubscriptionChanges): Promise<SubscriptionRow | undefined> {
  const set: Record<string, unknown> = { updated_at: sql`now()` };
  if (changes.url !== undefined) set.url = changes.url;
  if (changes.description !== undefined) set.description = changes.description;
  if (changes.eventTypes !== undefined) set.event_types = changes.eventTypes === null ? null : sql`${JSON.stringify(changes.eventTypes)}::jsonb`;
  if (changes.filterDomain !== undefined) set.filter_domain = changes.filterDomain;
  if (changes.filterWorkflowId !== undefined) set.filter_workflow_id = changes.filterWorkflowId;
  if (changes.filterAgentKey !== undefined) set.filter_agent_key = changes.filterAgentKey;
  if (changes.enabled !== undefined) set.enabled = changes.enabled;
  if (changes.resume) Object.assign(set, { paused_at: null, paused_reason: null, failed_deliveries: 0 });
  if (changes.secret !== undefined) set.secret = changes.secret;
  if (changes.previousSecret !== undefined) set.previous_secret = changes.previousSecret;
  if (changes.previousSecretExpiresAt !== undefined) set.previous_secret_expires_at = changes.previousSecretExpiresAt;
  return (await kyselyOf(em)
    .updateTable('event_subscriptions')
    .set(set)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returning(COLUMNS)
    .executeTakeFirst()) as SubscriptionRow | undefined;
}

/** Deletes the subscription with its deliveries (the events stay for the others). */
export async function deleteSubscription(em: EntityManager, tenantId: string, id: string): Promise<boolean> {
  const result = await kyselyOf(em).deleteFrom('event_subscriptions').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
