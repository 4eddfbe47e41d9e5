import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isUuid } from '../common/schemas.js';
import { notFound } from '../errors.js';
import { lockTenantForKeyShare, lockTenantForUpdate } from '../tenants/tenant-records.js';
import { generateApiKey, hashApiKey, previewApiKey } from './api-key-format.js';
import { insertApiKey, revokeActiveTenantKeys, revokeEnvironmentKeys, saveKeyChanges } from './store/api-keys.js';
import { findEnvironmentByName, findTenantEnvironment, insertEnvironment, lockEnvironment } from './store/environments.js';

export interface IssuedKey {
  apiKey: string;
  apiKeyPreview: string;
  /** The same masked form as apiKeyPreview, under the name key rotation responses also use. */
  maskedKey: string;
}

export const DEFAULT_ENVIRONMENTS = ['production', 'development'] as const;

/**
 * Issues a new key for one environment and revokes the environment's previous keys, in the
 * caller's transaction. The environment row is locked so concurrent rotations serialise.
 *
 * Lock order, the same on every path that issues or revokes keys: tenant row, then environment
 * row, then keys. The key share lock on the tenant lets rotations of different environments run
 * side by side but waits for a tenant-wide rotation or revocation (which holds the tenant row
 * `for update`); without it the two deadlock, or a key issued meanwhile survives a revoke-all.
 */
export async function issueEnvironmentKey(em: EntityManager, tenantId: string, environmentId: string): Promise<IssuedKey> {
  await lockTenantForKeyShare(em, tenantId);
  await lockEnvironment(em, environmentId);
  await revokeEnvironmentKeys(em, environmentId);
  const apiKey = generateApiKey();
  const apiKeyPreview = previewApiKey(apiKey);
  await insertApiKey(em, { tenantId, environmentId, keyHash: hashApiKey(apiKey), keyPreview: apiKeyPreview });
  return { apiKey, apiKeyPreview, maskedKey: apiKeyPreview };
}

/** Creates the default environments with a key each; returns the production key. */
export async function createDefaultEnvironments(em: EntityManager, tenantId: string): Promise<IssuedKey> {
  let production: IssuedKey | null = null;
  for (const name of DEFAULT_ENVIRONMENTS) {
    const env = await insertEnvironment(em, tenantId, name);
    const issued = await issueEnvironmentKey(em, tenantId, env.id);
    if (name === 'production') production = issued;
  }
  return production!;
}

export async function findEnvironment(em: EntityManager, tenantId: string, environmentId: string) {
  if (!isUuid(environmentId)) return null;
  return findTenantEnvironment(em, tenantId, environmentId);
}

/** Rotates one environment's key (the old key stops working at once). */
export async function rotateEnvironmentKey(em: EntityManager, tenantId: string, environmentId: string, actor: Actor): Promise<IssuedKey> {
  return em.transactional(async (tx) => {
    const env = await findEnvironment(tx, tenantId, environmentId);
    if (!env) throw notFound('Environment');
    const issued = await issueEnvironmentKey(tx, tenantId, env.id);
    recordAudit(tx, tenantId, actor, { action: 'api_key.rotated', targetType: 'environment', targetId: env.id, details: { environment: env.name, preview: issued.apiKeyPreview } });
    await saveKeyChanges(tx);
    return issued;
  });
}

/** Legacy tenant-wide rotation: a new production key, every other key revoked. */
export async function rotateTenantKey(em: EntityManager, tenantId: string, actor: Actor): Promise<IssuedKey> {
  return em.transactional(async (tx) => {
    await lockTenantForUpdate(tx, tenantId);
    let production = await findEnvironmentByName(tx, tenantId, 'production');
    if (!production) {
      production = await insertEnvironment(tx, tenantId, 'production');
    }
    await revokeActiveTenantKeys(tx, tenantId);
    const issued = await issueEnvironmentKey(tx, tenantId, production.id);
    recordAudit(tx, tenantId, actor, { action: 'api_key.rotated_all', targetType: 'tenant', targetId: tenantId, details: { preview: issued.apiKeyPreview } });
    await saveKeyChanges(tx);
    return issued;
  });
}

/** Revokes every key of the tenant; returns how many were active. */
export async function revokeTenantKeys(em: EntityManager, tenantId: string, actor: Actor): Promise<number> {
  return em.transactional(async (tx) => {
    // Waits for rotations in flight, so no key they issue outlives this revocation.
    await lockTenantForUpdate(tx, tenantId);
    const revoked = await revokeActiveTenantKeys(tx, tenantId);
    recordAudit(tx, tenantId, actor, { action: 'api_key.revoked_all', targetType: 'tenant', targetId: tenantId, details: { revoked } });
    await saveKeyChanges(tx);
    return revoked;
  });
}
