// Reads of tenants.enabled_domains and custom_domains, which the tenants and domains features own
// and write (server/tenants/store/, server/domains/store/); collections only check which domains
// are active here.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** The tenant's enabled built-in domains as stored (undefined when there is no such tenant). */
export async function selectTenantEnabledDomains(em: EntityManager, tenantId: string): Promise<string[] | null | undefined> {
  const tenant = await kyselyOf(em).selectFrom('tenants').select('enabled_domains').where('id', '=', tenantId).executeTakeFirst();
  return tenant?.enabled_domains;
}

/** The keys of the tenant's active custom domains. */
export async function selectActiveCustomDomainKeys(em: EntityManager, tenantId: string): Promise<string[]> {
  const rows = await kyselyOf(em).selectFrom('custom_domains').select('domain_key').where('tenant_id', '=', tenantId).where('is_active', '=', true).execute();
  return rows.map((r) => r.domain_key);
}
