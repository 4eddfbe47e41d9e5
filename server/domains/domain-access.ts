// Whether a tenant may use a domain: the one verdict (usable / unknown / not_enabled) and the one error for it.
//
// A built-in domain is usable when the tenant has it enabled (tenants.enabled_domains); a custom
// domain when it is the tenant's own and active. Unknown keys (and other tenants' custom domains)
// are 404 NOT_FOUND; a known domain the tenant may not use is 403 DOMAIN_NOT_ENABLED, whether it is
// a built-in domain not enabled or a custom domain switched off.
import type { EntityManager } from '../../db/orm.js';
import { AppError } from '../errors.js';
import { selectEnabledDomains } from '../tenants/tenant-records.js';
import { isBuiltInDomain } from './built-in-domains.js';
import { findDomain, findDomainsByKeys, type CustomDomainRow } from './store/custom-domains.js';

export type DomainAccess = 'usable' | 'unknown' | 'not_enabled';

/**
 * The verdict from what the caller holds already: the tenant's enabled domains (a TenantRuntime's, or
 * the column its own statement read) and the tenant's custom domain with this key (null when it has
 * none). A built-in key is judged by the enabled domains alone, any other key by its custom domain.
 */
export function judgeDomainAccess(domainKey: string, enabledDomains: readonly string[] | null | undefined, customDomain: { isActive: boolean } | null): DomainAccess {
  if (isBuiltInDomain(domainKey)) return enabledDomains?.includes(domainKey) ? 'usable' : 'not_enabled';
  if (!customDomain) return 'unknown';
  return customDomain.isActive ? 'usable' : 'not_enabled';
}

/**
 * Whether configuration may name the key (an agent's knowledge domains): any domain the verdict
 * does not call unknown, so a built-in domain not enabled or an inactive custom domain may be named.
 * Naming is not using: a use later still needs the verdict `usable`.
 */
export function isKnownDomain(domainKey: string, hasCustomDomain: boolean): boolean {
  return isBuiltInDomain(domainKey) || hasCustomDomain;
}

/** The one error for a domain the tenant may not use. */
export function domainAccessError(domainKey: string, access: Exclude<DomainAccess, 'usable'>): AppError {
  if (access === 'unknown') return new AppError('NOT_FOUND', `Domain "${domainKey}" not found`, { domain: domainKey });
  const why = isBuiltInDomain(domainKey) ? 'is not enabled for this account' : 'is not active';
  return new AppError('DOMAIN_NOT_ENABLED', `Domain "${domainKey}" ${why}`, { domain: domainKey });
}

/** Throws the domain's error unless the verdict is `usable`. */
export function assertDomainUsable(domainKey: string, access: DomainAccess): void {
  if (access !== 'usable') throw domainAccessError(domainKey, access);
}

/**
 * For a tenant whose enabled domains the caller holds (TenantRuntime): throws unless the domain is
 * usable. A built-in key costs no read; a custom key one read of its row, which is returned for the
 * caller's next step (null for a built-in domain).
 */
export async function requireUsableDomain(em: EntityManager, tenant: { id: string; enabledDomains: readonly string[] }, domainKey: string): Promise<CustomDomainRow | null> {
  if (isBuiltInDomain(domainKey)) {
    assertDomainUsable(domainKey, judgeDomainAccess(domainKey, tenant.enabledDomains, null));
    return null;
  }
  const domain = await findDomain(em, tenant.id, domainKey);
  assertDomainUsable(domainKey, judgeDomainAccess(domainKey, null, domain));
  return domain;
}

/**
 * Throws the error of the first key (in the order given) the tenant may not use. Reads the tenant's
 * enabled domains only when a built-in key is asked for, and its custom domains with the other keys.
 */
export async function requireUsableDomains(em: EntityManager, tenantId: string, domainKeys: string[]): Promise<void> {
  const keys = [...new Set(domainKeys)];
  const enabled = keys.some(isBuiltInDomain) ? await selectEnabledDomains(em, tenantId) : undefined;
  const custom = await findDomainsByKeys(em, tenantId, keys.filter((key) => !isBuiltInDomain(key)));
  const byKey = new Map(custom.map((domain) => [domain.domainKey, domain]));
  for (const key of keys) assertDomainUsable(key, judgeDomainAccess(key, enabled, byKey.get(key) ?? null));
}
