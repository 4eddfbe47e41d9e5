import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { Environment } from '../../db/entities/tenant.js';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired } from '../common/schemas.js';
import { AppError } from '../errors.js';
import { issueEnvironmentKey } from '../keys/keys.service.js';

interface EnvRow {
  id: string;
  name: string;
  created_at: Date;
  key_preview: string | null;
  last_used_at: Date | null;
}

export async function listEnvironments(em: EntityManager, tenantId: string) {
  const rows = await em.execute<EnvRow[]>(
    `select e.id, e.name, e.created_at, k.key_preview, k.last_used_at
       from environments e
       left join api_keys k on k.environment_id = e.id and k.revoked_at is null
      where e.tenant_id = ? order by e.created_at, e.name`,
    [tenantId],
  );
  return {
    environments: rows.map((r) => ({
      id: r.id,
      name: r.name,
      apiKeyPreview: r.key_preview,
      apiKeyLastUsedAt: iso(r.last_used_at),
      createdAt: isoRequired(r.created_at),
    })),
  };
}

export async function createEnvironment(em: EntityManager, tenantId: string, actor: Actor, name: string) {
  try {
    return await em.transactional(async (tx) => {
      const env = tx.create(Environment, { tenant: tenantId, name });
      await tx.flush();
      const issued = await issueEnvironmentKey(tx, tenantId, env.id);
      recordAudit(tx, tenantId, actor, { action: 'environment.created', targetType: 'environment', targetId: env.id, details: { name } });
      await tx.flush();
      return {
        environment: { id: env.id, name: env.name, apiKeyPreview: issued.apiKeyPreview, apiKeyLastUsedAt: null, createdAt: isoRequired(env.createdAt) },
        apiKey: issued.apiKey,
      };
    });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw new AppError('CONFLICT', `An environment named ${name} exists already`);
    throw err;
  }
}
