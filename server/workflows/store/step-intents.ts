// Reads of custom_intents a workflow step needs (an ai_intent step naming its intent by id). Reads
// only: the intents feature writes that table.
import type { EntityManager } from '../../../db/orm.js';
import { kyselyOf } from '../../../db/kysely.js';

/** The domain and intent keys of the tenant's custom intent `id`; undefined when it no longer exists. */
export async function findIntentKeys(em: EntityManager, tenantId: string, id: string) {
  return kyselyOf(em).selectFrom('custom_intents').select(['domain_key', 'intent_key']).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}
