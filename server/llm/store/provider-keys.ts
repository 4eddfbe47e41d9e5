// The tenant_provider_keys table (tenants' own provider keys, encrypted); this module alone writes it.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

export interface ProviderKeyRow {
  provider: string;
  key_preview: string;
  created_at: Date;
  updated_at: Date;
}

/** Stores (or replaces) the tenant's encrypted key for `provider`; returns the row as it is now. */
export async function upsertProviderKey(em: EntityManager, tenantId: string, provider: string, encryptedKey: string, keyPreview: string): Promise<ProviderKeyRow> {
  return kyselyOf(em)
    .insertInto('tenant_provider_keys')
    .values({ tenant_id: tenantId, provider, encrypted_key: encryptedKey, key_preview: keyPreview, created_at: sql`now()`, updated_at: sql`now()` })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'provider']).doUpdateSet({
        encrypted_key: (eb) => eb.ref('excluded.encrypted_key'),
        key_preview: (eb) => eb.ref('excluded.key_preview'),
        updated_at: sql`now()`,
      }),
    )
    .returning(['provider', 'key_preview', 'created_at', 'updated_at'])
    .executeTakeFirstOrThrow();
}

/** Whether the tenant's key for `provider` was there to delete. */
export async function deleteProviderKey(em: EntityManager, tenantId: string, provider: string): Promise<boolean> {
  const rows = await kyselyOf(em)
    .deleteFrom('tenant_provider_keys')
    .where('tenant_id', '=', tenantId)
    .where('provider', '=', provider)
    .returning('id')
    .execute();
  return rows.length > 0;
}

/** The tenant's keys (previews only), by provider. */
export async function selectProviderKeys(em: EntityManager, tenantId: string): Promise<ProviderKeyRow[]> {
  return kyselyOf(em)
    .selectFrom('tenant_provider_keys')
    .select(['provider', 'key_preview', 'created_at', 'updated_at'])
    .where('tenant_id', '=', tenantId)
    .orderBy('provider')
    .execute();
}

/** The tenant's encrypted key for `provider` (null: none). */
export async function selectEncryptedProviderKey(em: EntityManager, tenantId: string, provider: string): Promise<string | null> {
  const row = await kyselyOf(em)
    .selectFrom('tenant_provider_keys')
    .select('encrypted_key')
    .where('tenant_id', '=', tenantId)
    .where('provider', '=', provider)
    .executeTakeFirst();
  return row?.encrypted_key ?? null;
}

/** Providers the tenant has a key for. */
export async function selectKeyProviders(em: EntityManager, tenantId: string): Promise<string[]> {
  const rows = await kyselyOf(em).selectFrom('tenant_provider_keys').select('provider').where('tenant_id', '=', tenantId).execute();
  return rows.map((r) => r.provider);
}
