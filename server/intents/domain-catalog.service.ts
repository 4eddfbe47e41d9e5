// Discovery for API keys: the tenant's own domains with the intents each offers, and their endpoints.
import type { EntityManager } from '../../db/orm.js';
import { listCustomDomains } from '../domains/custom-domains.service.js';
import { judgeDomainAccess } from '../domains/domain-access.js';
import type { TenantRuntime } from '../tenants/tenant-runtime.js';
import type { IntentDefinition } from './intent-definition.js';
import { listDomainIntents } from './resolve-intent.js';

/** The route that runs `intent`. */
export const intentEndpoint = (intent: Pick<IntentDefinition, 'domain' | 'key'>) =>
  intent.domain === 'hiring' ? `/v1/hiring/${intent.key}` : `/v1/domains/${intent.domain}/intents/${intent.key}/run`;

/** The tenant's custom domains with the intents of the ones it may use (the active ones). */
export async function listDomainCatalog(em: EntityManager, tenantId: string, tenant: TenantRuntime) {
  const { domains } = await listCustomDomains(em, tenantId);
  return Promise.all(
    domains.map(async (d) => {
      const usable = judgeDomainAccess(d.domain_key, tenant.enabledDomains, { isActive: d.is_active }) === 'usable';
      const intents = usable ? await listDomainIntents(em, tenant, d.domain_key) : [];
      return {
        domain_key: d.domain_key,
        display_name: d.display_name,
        description: d.description,
        is_active: d.is_active,
        intents: intents.map((i) => ({ intent_key: i.key, display_name: i.displayName, endpoint: intentEndpoint(i), method: 'POST' as const })),
      };
    }),
  );
}
