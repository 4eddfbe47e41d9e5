// Named keys (created by the tenant's owners and admins with a set of permissions and an optional
// expiry) and each environment's permissions, which bound every key of the environment.
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { iso, isoRequired, isUuid } from '../common/schemas.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import { lockTenantForKeyShare } from '../tenants/tenant-records.js';
import { generateApiKey, hashApiKey, previewApiKey } from './api-key-format.js';
import type { ApiKeyDto, CreatedKeyDto, CreateKeyInput } from './keys.schemas.js';
import { PERMISSION_PRESETS, permissionList, permissionMask, presetOf, type Permission, type PermissionPreset } from './permissions.js';
import { countActiveNamedKeys, insertNamedKey, listActiveTenantKeys, revokeNamedKey, saveKeyChanges } from './store/api-keys.js';
import { findEnvironmentByName, findTenantEnvironment, lockEnvironment, updateEnvironmentPermissions } from './store/environments.js';

/** Named keys a tenant may hold at once (revoked ones do not count). */
export const MAX_NAMED_KEYS = 100;

type KeyRow = Awaited<ReturnType<typeof listActiveTenantKeys>>[number];

function toKeyDto(row: KeyRow, now = Date.now()): ApiKeyDto {
  const environmentMask = row.environment_id ? permissionMask(row.environment_permissions) : permissionMask(null);
  const mask = row.permissions ? permissionMask(row.permissions) & environmentMask : environmentMask;
  return {
    id: row.id,
    name: row.name,
    kind: row.name ? 'named' : 'environment',
    environment: row.environment_name ?? null,
    permissions: permissionList(mask),
    preset: presetOf(mask),
    apiKeyPreview: row.key_preview,
    expires_at: iso(row.expires_at),
    expired: row.expires_at ? new Date(row.expires_at).getTime() <= now : false,
    last_used_at: iso(row.last_used_at),
    created_by: row.created_by ?? null,
    created_at: isoRequired(row.created_at),
  };
}

/** Exactly one of a preset or a list, as a list. */
function chosenPermissions(input: { preset?: string; permissions?: string[] | null }, field: string): string[] | null {
  if (input.preset !== undefined && input.permissions !== undefined) {
    throw invalidInput('Give either a preset or a list of permissions, not both', [{ path: 'permissions', message: 'remove either preset or permissions' }]);
  }
  if (input.preset !== undefined) return [...PERMISSION_PRESETS[input.preset as PermissionPreset]];
  if (input.permissions === undefined) throw invalidInput(`Choose the ${field}'s permissions`, [{ path: 'preset', message: 'give a preset or a list of permissions' }]);
  return input.permissions;
}

export async function listApiKeys(em: EntityManager, tenantId: string): Promise<{ keys: ApiKeyDto[] }> {
  const now = Date.now();
  return { keys: (await listActiveTenantKeys(em, tenantId)).map((row) => toKeyDto(row, now)) };
}

export async function createNamedKey(em: EntityManager, tenantId: string, actor: Actor, input: CreateKeyInput): Promise<CreatedKeyDto> {
  const permissions = chosenPermissions(input, 'key')!;
  const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) throw invalidInput('The expiry is in the past', [{ path: 'expires_at', message: 'must be in the future' }]);
  const environmentName = input.environment ?? 'production';
  return em.transactional(async (tx) => {
    // The same lock order as every path that issues or revokes keys (keys.service.ts).
    await lockTenantForKeyShare(tx, tenantId);
    const environment = await findEnvironmentByName(tx, tenantId, environmentName);
    if (!environment) throw invalidInput(`The tenant has no environment named ${environmentName}`, [{ path: 'environment', message: 'unknown environment' }]);
    await lockEnvironment(tx, environment.id);
    const outside = permissions.filter((p) => (permissionMask([p]) & permissionMask(environment.permissions)) === 0);
    if (outside.length) {
      throw invalidInput(`The ${environmentName} environment's keys may not have ${outside.join(', ')}`, [
        { path: 'permissions', message: `outside the environment's permissions: ${outside.join(', ')} (an owner or admin can widen them)` },
      ]);
    }
    if ((await countActiveNamedKeys(tx, tenantId)) >= MAX_NAMED_KEYS) {
      throw new AppError('CONFLICT', `The tenant has ${MAX_NAMED_KEYS} named keys: revoke one first`, { limit: MAX_NAMED_KEYS });
    }
    const apiKey = generateApiKey();
    const keyPreview = previewApiKey(apiKey);
    const row = await insertNamedKey(tx, {
      tenantId, environmentId: environment.id, name: input.name, permissions, expiresAt, createdBy: actor.name, keyHash: hashApiKey(apiKey), keyPreview,
    });
    if (!row) throw new AppError('KEY_NAME_TAKEN', `A key named ${input.name} exists already`, { name: input.name });
    recordAudit(tx, tenantId, actor, {
      action: 'api_key.created', targetType: 'api_key', targetId: row.id,
      details: { name: input.name, environment: environmentName, permissions, preview: keyPreview, expires_at: iso(expiresAt) },
    });
    await saveKeyChanges(tx);
    const dto = toKeyDto({
      id: row.id, name: input.name, key_preview: keyPreview, permissions, expires_at: expiresAt, created_by: actor.name, created_at: row.createdAt,
      last_used_at: null, environment_id: environment.id, environment_name: environment.name, environment_permissions: environment.permissions ?? null,
    });
    return { key: dto, apiKey };
  });
}

/** Revokes a named key by id or name (environment keys are rotated instead). */
export async function revokeApiKey(em: EntityManager, tenantId: string, actor: Actor, idOrName: string): Promise<void> {
  await em.transactional(async (tx) => {
    await lockTenantForKeyShare(tx, tenantId);
    const revoked = await revokeNamedKey(tx, tenantId, isUuid(idOrName) ? { id: idOrName } : { name: idOrName });
    if (!revoked) throw notFound('Named API key');
    recordAudit(tx, tenantId, actor, { action: 'api_key.revoked', targetType: 'api_key', targetId: revoked.id, details: { name: revoked.name, preview: revoked.key_preview } });
    await saveKeyChanges(tx);
  });
}

/** Sets what an environment's keys may do (null: every permission); returns the permissions now. */
export async function setEnvironmentPermissions(
  em: EntityManager,
  tenantId: string,
  actor: Actor,
  environmentId: string,
  input: { preset?: string; permissions?: string[] | null },
): Promise<Permission[]> {
  const permissions = chosenPermissions(input, 'environment');
  return em.transactional(async (tx) => {
    const environment = isUuid(environmentId) ? await findTenantEnvironment(tx, tenantId, environmentId) : null;
    if (!environment) throw notFound('Environment');
    await lockEnvironment(tx, environment.id);
    await updateEnvironmentPermissions(tx, environment.id, permissions);
    const now = permissionList(permissionMask(permissions));
    recordAudit(tx, tenantId, actor, {
      action: 'environment.permissions_changed', targetType: 'environment', targetId: environment.id,
      details: { environment: environment.name, before: permissionList(permissionMask(environment.permissions)), after: now },
    });
    await saveKeyChanges(tx);
    return now;
  });
}
