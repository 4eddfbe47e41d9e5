// Reads of the custom_domains table, which the domains feature owns and writes
// (server/domains/store/custom-domains.ts); agents only check references here.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** Which of `domainKeys` (not empty) name a custom domain of the tenant. */
export async function findCustomDomainKeys(em: EntityManager, tenantId: string, domainKeys: string[]): Promise<{ domain_key: string }[]> {
  return kyselyOf(em).selectFrom('custom_domains').select('domain_key').where('tenant_id', '=', tenantId).where('domain_key', 'in', domainKeys).execute();
}
