// The api_keys table; this module alone writes it.
import { sql as kysql } from 'kysely';
import { ApiKey, type IApiKey } from '../../../db/entities/tenant.js';
import { kyselyOf } from '../../../db/kysely.js';
import { build, runBuilt } from '../../../db/statements.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';
import { TENANT_RUNTIME_COLUMNS, type TenantRuntimeRow } from '../../tenants/store/tenants.js';

/** A key with its environment and tenant, as the per-request lookup reads it. */
export interface ApiKeyLookupRow extends TenantRuntimeRow {
  key_id: string;
  key_name: string | null;
  key_preview: string;
  /** A named key's own permissions (null: an environment key, which has its environment's). */
  key_permissions: string[] | null;
  /** The environment's permissions (null: every permission). */
  environment_permissions: string[] | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  environment_id: string | null;
  environment_name: string | null;
  is_active: boolean;
  plan: string;
}

// One indexed query per request: key -> environment -> tenant. It also carries the tenant's
// runtime settings, so an intent run needs no second read of the tenant. The columns and joins
// are exported for the one statement that reads the key together with a run's own first data
// (server/intents/store/run-context.ts): the key is checked the same way whichever reads it.
export const API_KEY_LOOKUP_COLUMNS = `k.id as key_id, k.name as key_name, k.key_preview, k.permissions as key_permissions, k.expires_at,
         k.revoked_at, k.last_used_at, k.environment_id, e.name as environment_name, e.permissions as environment_permissions,
         t.is_active, t.plan, ${TENANT_RUNTIME_COLUMNS}`;
/** From api_keys `k` (filter on k.key_hash) to its tenant `t` and environment `e`. */
export const API_KEY_LOOKUP_FROM = `api_keys k
    join tenants t on t.id = k.tenant_id
    left join environments e on e.id = k.environment_id`;
// Raw(other): a hot statement on the SqlPool (a named prepared statement) whose column and join lists run-context.ts shares.
const LOOKUP_SQL = `select ${API_KEY_LOOKUP_COLUMNS} from ${API_KEY_LOOKUP_FROM} where k.key_hash = $1`;

/** The key with this hash (revoked or not), its environment and its tenant; undefined when there is none. */
export async function lookupApiKey(sql: SqlPool, keyHash: string): Promise<ApiKeyLookupRow | undefined> {
  const rows = await sql.query<ApiKeyLookupRow>(LOOKUP_SQL, [keyHash], 'liya_api_key_lookup');
  return rows[0];
}

/** Sets the key's last_used_at to now. */
export async function recordApiKeyUse(sql: SqlPool, keyId: string): Promise<void> {
  await runBuilt(sql, build.updateTable('api_keys').set({ last_used_at: kysql<Date>`now()` }).where('id', '=', keyId));
}

/** Inserts a key now (with whatever else `em` holds). */
export async function insertApiKey(em: EntityManager, values: { tenantId: string; environmentId: string; keyHash: string; keyPreview: string }): Promise<IApiKey> {
  const key = em.create(ApiKey, { tenant: values.tenantId, environment: values.environmentId, keyHash: values.keyHash, keyPreview: values.keyPreview });
  await em.flush();
  return key;
}

export interface NewNamedKey {
  tenantId: string;
  environmentId: string;
  name: string;
  permissions: string[];
  expiresAt: Date | null;
  createdBy: string;
  keyHash: string;
  keyPreview: string;
}

/** Inserts a named key now; null when an active key of the tenant has that name. */
export async function insertNamedKey(em: EntityManager, values: NewNamedKey): Promise<IApiKey | null> {
  const { tenantId, environmentId, ...rest } = values;
  const key = em.create(ApiKey, { tenant: tenantId, environment: environmentId, ...rest });
  try {
    await em.flush();
    return key;
  } catch (err) {
    if (isUniqueViolation(err, 'api_keys_tenant_name_unique')) return null;
    throw err;
  }
}

/** The tenant's keys that are not revoked (expired ones included), with their environment; environment keys first, then by name. */
export async function listActiveTenantKeys(em: EntityManager, tenantId: string) {
  return kyselyOf(em)
    .selectFrom('api_keys as k')
    .leftJoin('environments as e', 'e.id', 'k.environment_id')
    .select(['k.id', 'k.name', 'k.key_preview', 'k.permissions', 'k.expires_at', 'k.created_by', 'k.created_at', 'k.last_used_at', 'k.environment_id', 'e.name as environment_name', 'e.permissions as environment_permissions'])
    .where('k.tenant_id', '=', tenantId)
    .where('k.revoked_at', 'is', null)
    .orderBy(kysql`k.name is not null`)
    .orderBy('k.name')
    .orderBy('e.name')
    .execute();
}

/** How many named keys of the tenant still work or wait to expire (not revoked). */
export async function countActiveNamedKeys(em: EntityManager, tenantId: string): Promise<number> {
  const row = await kyselyOf(em)
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('name', 'is not', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Revokes the tenant's active named key with this id or name; the revoked key's id and name, or null when there is none. */
export async function revokeNamedKey(em: EntityManager, tenantId: string, idOrName: { id?: string; name?: string }) {
  let query = kyselyOf(em)
    .updateTable('api_keys')
    .set({ revoked_at: kysql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('name', 'is not', null)
    .where('revoked_at', 'is', null);
  if (idOrName.id) query = query.where('id', '=', idOrName.id);
  else query = query.where('name', '=', idOrName.name!);
  return (await query.returning(['id', 'name', 'key_preview']).executeTakeFirst()) ?? null;
}

/** Revokes the environment's own active key (its named keys stay). */
export async function revokeEnvironmentKeys(em: EntityManager, environmentId: string): Promise<void> {
  await kyselyOf(em)
    .updateTable('api_keys')
    .set({ revoked_at: kysql<Date>`now()` })
    .where('environment_id', '=', environmentId)
    .where('name', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Revokes every active key of the tenant; returns how many were active. */
export async function revokeActiveTenantKeys(em: EntityManager, tenantId: string): Promise<number> {
  const result = await kyselyOf(em)
    .updateTable('api_keys')
    .set({ revoked_at: kysql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The preview of the tenant's newest active production key; null when there is none. */
export async function findProductionKeyPreview(em: EntityManager, tenantId: string): Promise<string | null> {
  const key = await kyselyOf(em)
    .selectFrom('api_keys as k')
    .innerJoin('environments as e', 'e.id', 'k.environment_id')
    .select('k.key_preview')
    .where('k.tenant_id', '=', tenantId)
    .where('e.name', '=', 'production')
    .where('k.name', 'is', null)
    .where('k.revoked_at', 'is', null)
    .orderBy('k.created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return key?.key_preview ?? null;
}

/** Writes the changes `em` holds: what the caller queued beside a key change, such as its audit entry. */
export async function saveKeyChanges(em: EntityManager): Promise<void> {
  await em.flush();
}
