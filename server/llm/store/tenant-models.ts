// The tenant's default model, read from tenants for the model gateway; reads only (the tenants
// table is written by the tenants feature's store).
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** The tenant's default model reference (null: none set, or no such tenant). */
export async function selectTenantDefaultModel(em: EntityManager, tenantId: string): Promise<string | null> {
  const row = await kyselyOf(em).selectFrom('tenants').select('default_model').where('id', '=', tenantId).executeTakeFirst();
  return row?.default_model ?? null;
}

/** The tenant's default model and its fallbacks (nulls: none set, or no such tenant), in one read. */
export async function selectTenantModelSettings(em: EntityManager, tenantId: string): Promise<{ defaultModel: string | null; modelFallbacks: string[] | null }> {
  const row = await kyselyOf(em).selectFrom('tenants').select(['default_model', 'model_fallbacks']).where('id', '=', tenantId).executeTakeFirst();
  const fallbacks = row?.model_fallbacks;
  return { defaultModel: row?.default_model ?? null, modelFallbacks: Array.isArray(fallbacks) ? fallbacks.filter((m): m is string => typeof m === 'string') : null };
}
