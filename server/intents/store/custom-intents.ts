// The custom_intents and intent_versions tables; this module alone writes them.
import { sql } from 'kysely';
import { CustomIntent, IntentVersion, type ICustomDomain, type ICustomIntent, type IIntentVersion } from '../../../db/entities/intent.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { ICustomIntent as CustomIntentRow, IIntentVersion as IntentVersionRow } from '../../../db/entities/intent.js';

/** A domain's intents by sort_order, then key (`activeOnly`: the runnable ones). */
export async function listIntents(em: EntityManager, tenantId: string, domain: ICustomDomain, activeOnly = false): Promise<ICustomIntent[]> {
  const where = activeOnly ? { tenant: tenantId, domain, isActive: true } : { tenant: tenantId, domain };
  return em.find(CustomIntent, where, { orderBy: { sortOrder: 'asc', intentKey: 'asc' } });
}

/**
 * The tenant's intent `domainKey/intentKey`, or null. With `lock` the row is locked (`for
 * update`, so concurrent saves queue) and re-read past the identity map.
 */
export async function findIntent(em: EntityManager, tenantId: string, domainKey: string, intentKey: string, lock = false): Promise<ICustomIntent | null> {
  if (lock) {
    await kyselyOf(em)
      .selectFrom('custom_intents')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('domain_key', '=', domainKey)
      .where('intent_key', '=', intentKey)
      .forUpdate()
      .execute();
  }
  return em.findOne(CustomIntent, { tenant: tenantId, domainKey, intentKey }, { refresh: lock });
}

/** The intent `intentKey` of a domain already loaded, or null. */
export async function findIntentInDomain(em: EntityManager, tenantId: string, domain: ICustomDomain, intentKey: string): Promise<ICustomIntent | null> {
  return em.findOne(CustomIntent, { tenant: tenantId, domain, intentKey });
}

/** Number of intents per domain id of the tenant (`n` as text). */
export async function countIntentsByDomain(em: EntityManager, tenantId: string): Promise<{ domain_id: string; n: string }[]> {
  return kyselyOf(em)
    .selectFrom('custom_intents')
    .select((eb) => ['domain_id', eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('domain_id')
    .execute();
}

/** Every intent of the tenant with only its keys and prompt binding loaded. */
export async function listIntentBindings(em: EntityManager, tenantId: string) {
  return em.find(CustomIntent, { tenant: tenantId }, { fields: ['domainKey', 'intentKey', 'promptBinding'] });
}

/** Adds a new intent to the unit of work (written by the next flush). */
export function createIntent(
  em: EntityManager,
  tenantId: string,
  domain: ICustomDomain,
  values: { domainKey: string; intentKey: string; displayName: string; promptTemplate: string },
): ICustomIntent {
  return em.create(CustomIntent, {
    tenant: tenantId,
    domain,
    domainKey: values.domainKey,
    intentKey: values.intentKey,
    displayName: values.displayName,
    promptTemplate: values.promptTemplate,
    currentVersion: 0,
  });
}

/**
 * Adds the intent's next version to the unit of work (written by the next flush). The caller
 * holds the intent row lock (`for update`), so concurrent saves get consecutive numbers; the
 * unique (intent, version) index is the backstop.
 */
export function appendIntentVersion(
  em: EntityManager,
  intent: ICustomIntent,
  values: {
    definition: Record<string, unknown>;
    changedFields: string[];
    changeType: 'create' | 'update' | 'restore';
    restoredFromVersion: number | null;
    createdBy: string | null;
    actorName: string | null;
  },
): IIntentVersion {
  intent.currentVersion += 1;
  return em.create(IntentVersion, {
    tenant: intent.tenant,
    intent,
    versionNumber: intent.currentVersion,
    definition: values.definition,
    changedFields: values.changedFields,
    changeType: values.changeType,
    restoredFromVersion: values.restoredFromVersion,
    createdBy: values.createdBy,
    actorName: values.actorName,
  });
}

/**
 * Writes a new intent with its first version (flushing the unit of work); false when the domain
 * has an intent with this key already (the transaction is then aborted: the caller must end it).
 */
export async function flushNewIntent(em: EntityManager): Promise<boolean> {
  try {
    await em.flush();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** Writes the pending changes of the unit of work (intent rows and whatever else it holds). */
export async function flushIntentChanges(em: EntityManager): Promise<void> {
  await em.flush();
}

/** Deletes the intent (its versions go with it, by foreign-key cascade). */
export async function deleteIntent(em: EntityManager, intentId: string): Promise<void> {
  await kyselyOf(em).deleteFrom('custom_intents').where('id', '=', intentId).execute();
}

/** The intent's version `versionNumber`, or null. */
export async function findIntentVersion(em: EntityManager, intent: ICustomIntent, versionNumber: number): Promise<IIntentVersion | null> {
  return em.findOne(IntentVersion, { intent, versionNumber });
}

/** The intent's versions, newest first. */
export async function listIntentVersions(em: EntityManager, intent: ICustomIntent): Promise<IIntentVersion[]> {
  return em.find(IntentVersion, { intent }, { orderBy: { versionNumber: 'desc' } });
}

/** A page of the tenant's versions across its intents (with the intent loaded), newest first, and the total. */
export async function listRecentIntentVersions(
  em: EntityManager,
  tenantId: string,
  page: { limit: number; offset: number },
  domainKey?: string,
): Promise<[IIntentVersion[], number]> {
  const where = { tenant: tenantId, ...(domainKey ? { intent: { domainKey } } : {}) };
  return em.findAndCount(IntentVersion, where, {
    populate: ['intent'],
    orderBy: { createdAt: 'desc', versionNumber: 'desc' },
    limit: page.limit,
    offset: page.offset,
  });
}

/**
 * The tenant's custom intents whose id is one of `ids` or whose `domain/intent_key` is one of
 * `refs`: each with its id and that reference.
 */
export async function findCustomIntentRefs(em: EntityManager, tenantId: string, ids: string[], refs: string[]): Promise<{ id: string; ref: string }[]> {
  if (!ids.length && !refs.length) return [];
  const ref = sql<string>`domain_key || '/' || intent_key`;
  return kyselyOf(em)
    .selectFrom('custom_intents')
    .select([sql<string>`id::text`.as('id'), ref.as('ref')])
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([...(ids.length ? [eb('id', 'in', ids)] : []), ...(refs.length ? [eb(ref, 'in', refs)] : [])]))
    .execute();
}

/** The domain and intent key of the tenant's custom intent with this id, or undefined. */
export async function findCustomIntentKeys(em: EntityManager, tenantId: string, intentId: string): Promise<{ domain_key: string; intent_key: string } | undefined> {
  return kyselyOf(em).selectFrom('custom_intents').select(['domain_key', 'intent_key']).where('tenant_id', '=', tenantId).where('id', '=', intentId).executeTakeFirst();
}
