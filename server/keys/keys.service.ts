import { ApiKey, Environment } from '../../db/entities/tenant.js';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isUuid } from '../common/schemas.js';
import { notFound } from '../errors.js';
import { generateApiKey, hashApiKey, previewApiKey } from './api-key-format.js';

export interface IssuedKey {
  apiKey: string;
  apiKeyPreview: string;
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
  await em.execute('select id from tenants where id = ? for key share', [tenantId]);
  await em.execute('select id from environments where id = ? for update', [environmentId]);
  await em.execute('update api_keys set revoked_at = now() where environment_id = ? and revoked_at is null', [environmentId]);
  const apiKey = generateApiKey();
  const apiKeyPreview = previewApiKey(apiKey);
  em.create(ApiKey, { tenant: tenantId, environment: environmentId, keyHash: hashApiKey(apiKey), keyPreview: apiKeyPreview });
  await em.flush();
  return { apiKey, apiKeyPreview };
}

/** Creates the default environments with a key each; returns the production key. */
export async function createDefaultEnvironments(em: EntityManager, tenantId: string): Promise<IssuedKey> {
  let production: IssuedKey | null = null;
  for (const name of DEFAULT_ENVIRONMENTS) {
    const env = em.create(Environment, { tenant: tenantId, name });
    await em.flush();
    const issued = await issueEnvironmentKey(em, tenantId, env.id);
    if (name === 'production') production = issued;
  }
  return production!;
}

export async function findEnvironment(em: EntityManager, tenantId: string, environmentId: string) {
  if (!isUuid(environmentId)) return null;
  return em.findOne(Environment, { id: environmentId, tenant: tenantId });
}

/** Rotates one environment's key (the old key stops working at once). */
export async function rotateEnvironmentKey(em: EntityManager, tenantId: string, environmentId: string, actor: Actor): Promise<IssuedKey> {
  return em.transactional(async (tx) => {
    const env = await findEnvironment(tx, tenantId, environmentId);
    if (!env) throw notFound('Environment');
    const issued = await issueEnvironmentKey(tx, tenantId, env.id);
    recordAudit(tx, tenantId, actor, { action: 'api_key.rotated', targetType: 'environment', targetId: env.id, details: { environment: env.name, preview: issued.apiKeyPreview } });
    await tx.flush();
    return issued;
  });
}

/** Legacy tenant-wide rotation: a new production key, every other key revoked. */
export async function rotateTenantKey(em: EntityManager, tenantId: string, actor: Actor): Promise<IssuedKey> {
  return em.transactional(async (tx) => {
    await tx.execute('select id from tenants where id = ? for update', [tenantId]);
    let production = await tx.findOne(Environment, { tenant: tenantId, name: 'production' });
    if (!production) {
      production = tx.create(Environment, { tenant: tenantId, name: 'production' });
      await tx.flush();
    }
    await tx.execute('update api_keys set revoked_at = now() where tenant_id = ? and revoked_at is null', [tenantId]);
    const issued = await issueEnvironmentKey(tx, tenantId, production.id);
    recordAudit(tx, tenantId, actor, { action: 'api_key.rotated_all', targetType: 'tenant', targetId: tenantId, details: { preview: issued.apiKeyPreview } });
    await tx.flush();
    return issued;
  });
}

/** Revokes every key of the tenant; returns how many were active. */
export async function revokeTenantKeys(em: EntityManager, tenantId: string, actor: Actor): Promise<number> {
  return em.transactional(async (tx) => {
    // Waits for rotations in flight, so no key they issue outlives this revocation.
    await tx.execute('select id from tenants where id = ? for update', [tenantId]);
    const result = await tx.execute<{ affectedRows: number }>(
      'update api_keys set revoked_at = now() where tenant_id = ? and revoked_at is null',
      [tenantId],
      'run',
    );
    recordAudit(tx, tenantId, actor, { action: 'api_key.revoked_all', targetType: 'tenant', targetId: tenantId, details: { revoked: result.affectedRows ?? 0 } });
    await tx.flush();
    return result.affectedRows ?? 0;
  });
}
