// Reads of the tenants table, which the tenants feature owns and writes
// (server/tenants/store/tenants.ts); agents only read the tenant's default model here.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** The tenant's default model (null when it has none or there is no such tenant). */
export async function readTenantDefaultModel(em: EntityManager, tenantId: string): Promise<string | null> {
  const tenant = await kyselyOf(em).selectFrom('tenants').select('default_model').where('id', '=', tenantId).executeTakeFirst();
  return tenant?.default_model ?? null;
}
