// The custom_domains table; this module alone writes it.
import { CustomDomain, type ICustomDomain } from '../../../db/entities/intent.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { ICustomDomain as CustomDomainRow } from '../../../db/entities/intent.js';

const DOMAIN_ORDER = { sortOrder: 'asc', domainKey: 'asc' } as const;

/** The tenant's custom domains by sort_order, then key. */
export async function listDomains(em: EntityManager, tenantId: string): Promise<ICustomDomain[]> {
  return em.find(CustomDomain, { tenant: tenantId }, { orderBy: DOMAIN_ORDER });
}

/** A page of the tenant's custom domains by sort_order, then key, and how many it has. */
export async function listDomainsPage(em: EntityManager, tenantId: string, page: { limit: number; offset: number }): Promise<[ICustomDomain[], number]> {
  return em.findAndCount(CustomDomain, { tenant: tenantId }, { orderBy: DOMAIN_ORDER, limit: page.limit, offset: page.offset });
}

/** The tenant's domain with this key, or null. */
export async function findDomain(em: EntityManager, tenantId: string, domainKey: string): Promise<ICustomDomain | null> {
  return em.findOne(CustomDomain, { tenant: tenantId, domainKey });
}

/** The tenant's domains with these keys (any that exist; none for an empty list). */
export async function findDomainsByKeys(em: EntityManager, tenantId: string, domainKeys: string[]): Promise<ICustomDomain[]> {
  if (!domainKeys.length) return [];
  return em.find(CustomDomain, { tenant: tenantId, domainKey: { $in: domainKeys } });
}

/**
 * Inserts a domain (flushing the unit of work); null when the tenant has a domain with this key
 * already (the transaction is then aborted: the caller must end it).
 */
export async function insertDomain(
  em: EntityManager,
  tenantId: string,
  values: { domainKey: string; displayName: string; description: string | null; isActive: boolean; sortOrder: number },
): Promise<ICustomDomain | null> {
  const created = em.create(CustomDomain, {
    tenant: tenantId,
    domainKey: values.domainKey,
    displayName: values.displayName,
    description: values.description,
    isActive: values.isActive,
    sortOrder: values.sortOrder,
  });
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
  return created;
}

/** Writes the pending changes of the unit of work (domain rows and whatever else it holds). */
export async function flushDomainChanges(em: EntityManager): Promise<void> {
  await em.flush();
}

/** Deletes the domain (its intents and their versions go with it, by foreign-key cascade). */
export async function deleteDomain(em: EntityManager, domainId: string): Promise<void> {
  await kyselyOf(em).deleteFrom('custom_domains').where('id', '=', domainId).execute();
}

/** Which of `domainKeys` (not empty) name a custom domain of the tenant. */
export async function findCustomDomainKeys(em: EntityManager, tenantId: string, domainKeys: string[]): Promise<{ domain_key: string }[]> {
  return kyselyOf(em).selectFrom('custom_domains').select('domain_key').where('tenant_id', '=', tenantId).where('domain_key', 'in', domainKeys).execute();
}
