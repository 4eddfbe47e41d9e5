// Reads of the custom_intents table, which the intents feature owns and writes
// (server/intents/store/custom-intents.ts); agents only look intents up here.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

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
