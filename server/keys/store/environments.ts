// The environments table; this module alone writes it.
import { Environment, type IEnvironment } from '../../../db/entities/tenant.js';
import { sql as kysql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

/** Inserts the environment now (with whatever else `em` holds). */
export async function insertEnvironment(em: EntityManager, tenantId: string, name: string): Promise<IEnvironment> {
  const env = em.create(Environment, { tenant: tenantId, name });
  await em.flush();
  return env;
}

/** As insertEnvironment; null when the tenant has an environment of that name already. */
export async function insertEnvironmentUnlessTaken(em: EntityManager, tenantId: string, name: string): Promise<IEnvironment | null> {
  try {
    return await insertEnvironment(em, tenantId, name);
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

export async function findTenantEnvironment(em: EntityManager, tenantId: string, environmentId: string): Promise<IEnvironment | null> {
  return em.findOne(Environment, { id: environmentId, tenant: tenantId });
}

export async function findEnvironmentByName(em: EntityManager, tenantId: string, name: string): Promise<IEnvironment | null> {
  return em.findOne(Environment, { tenant: tenantId, name });
}

/** Locks the environment row `for update` until the end of `em`'s transaction. */
export async function lockEnvironment(em: EntityManager, environmentId: string): Promise<void> {
  await kyselyOf(em).selectFrom('environments').select('id').where('id', '=', environmentId).forUpdate().execute();
}

/** Sets what the environment's keys may do (null: every permission). */
export async function updateEnvironmentPermissions(em: EntityManager, environmentId: string, permissions: string[] | null): Promise<void> {
  await kyselyOf(em)
    .updateTable('environments')
    .set({ permissions: permissions === null ? null : kysql<string[]>`${JSON.stringify(permissions)}::jsonb` })
    .where('id', '=', environmentId)
    .execute();
}

/** The tenant's environments with their own active key's preview and last use (null without one), oldest first. */
export async function listEnvironmentsWithKeys(em: EntityManager, tenantId: string) {
  return kyselyOf(em)
    .selectFrom('environments as e')
    .leftJoin('api_keys as k', (join) => join.onRef('k.environment_id', '=', 'e.id').on('k.revoked_at', 'is', null).on('k.name', 'is', null))
    .select(['e.id', 'e.name', 'e.permissions', 'e.created_at', 'k.key_preview', 'k.last_used_at'])
    .where('e.tenant_id', '=', tenantId)
    .orderBy('e.created_at')
    .orderBy('e.name')
    .execute();
}
