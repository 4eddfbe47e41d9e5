import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired } from '../common/schemas.js';
import { AppError } from '../errors.js';
import { issueEnvironmentKey } from '../keys/keys.service.js';
import { permissionList, permissionMask } from '../keys/permissions.js';
import { insertEnvironmentUnlessTaken, listEnvironmentsWithKeys, saveKeyChanges } from '../keys/key-records.js';

// Key rotation as the dashboard offers it (the keys feature does the work).
export { rotateEnvironmentKey, rotateTenantKey } from '../keys/keys.service.js';

export async function listEnvironments(em: EntityManager, tenantId: string) {
  const rows = await listEnvironmentsWithKeys(em, tenantId);
  return {
    environments: rows.map((r) => ({
      id: r.id,
      name: r.name,
      apiKeyPreview: r.key_preview,
      apiKeyLastUsedAt: iso(r.last_used_at),
      permissions: permissionList(permissionMask(r.permissions)),
      createdAt: isoRequired(r.created_at),
    })),
  };
}

export async function createEnvironment(em: EntityManager, tenantId: string, actor: Actor, name: string) {
  return em.transactional(async (tx) => {
    const env = await insertEnvironmentUnlessTaken(tx, tenantId, name);
    if (!env) throw new AppError('CONFLICT', `An environment named ${name} exists already`);
    const issued = await issueEnvironmentKey(tx, tenantId, env.id);
    recordAudit(tx, tenantId, actor, { action: 'environment.created', targetType: 'environment', targetId: env.id, details: { name } });
    await saveKeyChanges(tx);
    return {
      environment: { id: env.id, name: env.name, apiKeyPreview: issued.apiKeyPreview, apiKeyLastUsedAt: null, permissions: permissionList(permissionMask(null)), createdAt: isoRequired(env.createdAt) },
      apiKey: issued.apiKey,
    };
  });
}
