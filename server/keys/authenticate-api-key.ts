import { AppError } from '../errors.js';
import type { AppDeps } from '../deps.js';
import { toTenantRuntime, type TenantRuntime } from '../tenants/tenant-runtime.js';
import type { Actor } from '../actor.js';
import { hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import { hasPermission, permissionList, permissionMask, type Permission } from './permissions.js';
import { lookupApiKey, recordApiKeyUse, type ApiKeyLookupRow } from './store/api-keys.js';

export interface ApiKeyScope {
  keyId: string;
  /** A named key's name; null for an environment's own key. */
  keyName: string | null;
  keyPreview: string;
  tenantId: string;
  environmentId: string | null;
  environmentName: string | null;
  /** What the key may do (a mask of server/keys/permissions.ts), within its environment's permissions. */
  permissions: number;
  plan: string;
  enabledDomains: string[];
  /** The tenant's runtime settings, read in the same query (intent runs need them first). */
  tenant: TenantRuntime;
}

type Headers = Record<string, string | string[] | undefined>;

const TOUCH_INTERVAL_MS = 60_000;
// Keys touched recently by this process: last_used_at is written at most once a minute per key.
const recentlyTouched = new Map<string, number>();

/**
 * Reads the key from `x-api-key` or `Authorization: Bearer`. `x-api-key` wins when both are sent,
 * since a gateway in front may put its own credential in Authorization.
 */
export function readApiKey(headers: Headers): string | null {
  const header = headers['x-api-key'];
  if (typeof header === 'string' && header.trim().length > 0) return header.trim();
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.trim().length > 0) {
    const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return match ? match[1].trim() : auth.trim();
  }
  return null;
}

export async function authenticateApiKey(deps: AppDeps, headers: Headers): Promise<ApiKeyScope> {
  return authenticateKeyHash(deps, readKeyHash(headers));
}

/** The stored form of the request's key; 401 when it is missing or malformed (no database read). */
function readKeyHash(headers: Headers): string {
  const key = readApiKey(headers);
  if (!key) throw new AppError('MISSING_API_KEY', 'Send your API key as Authorization: Bearer <key> or x-api-key');
  // A malformed key never reaches the database.
  if (!isWellFormedApiKey(key)) throw new AppError('INVALID_API_KEY_FORMAT', 'API keys look like svc_ followed by 43 characters');
  return hashApiKey(key);
}

/** Looks the key up and answers its scope, or the 401/403 it deserves. */
async function authenticateKeyHash(deps: AppDeps, keyHash: string): Promise<ApiKeyScope> {
  return scopeOfKeyRow(deps, keyHash, await lookupApiKey(deps.sql, keyHash));
}

/**
 * The scope of a key row read now (by lookupApiKey, or by a statement that reads the key together
 * with other data): the same checks whichever statement read it. A key that passes is remembered
 * for {@link rememberedScope}; one that fails is forgotten.
 */
function scopeOfKeyRow(deps: AppDeps, keyHash: string, row: ApiKeyLookupRow | undefined): ApiKeyScope {
  if (!row) {
    remembered.delete(keyHash);
    throw new AppError('INVALID_API_KEY', 'The API key is not recognised');
  }
  if (row.revoked_at) {
    remembered.delete(keyHash);
    throw new AppError('API_KEY_REVOKED', 'The API key was rotated or revoked');
  }
  if (row.expires_at && new Date(row.expires_at).getTime() <= Date.now()) {
    remembered.delete(keyHash);
    throw new AppError('API_KEY_EXPIRED', 'The API key has expired', { expired_at: new Date(row.expires_at).toISOString() });
  }
  if (!row.is_active) {
    remembered.delete(keyHash);
    throw new AppError('ACCOUNT_INACTIVE', 'The account is deactivated');
  }
  touchApiKey(deps, row.key_id, row.last_used_at);
  // A named key holds its own permissions within its environment's; an environment key, its environment's.
  const environmentMask = permissionMask(row.environment_permissions);
  const scope: ApiKeyScope = {
    keyId: row.key_id,
    keyName: row.key_name,
    keyPreview: row.key_preview,
    permissions: row.key_permissions ? permissionMask(row.key_permissions) & environmentMask : environmentMask,
    tenantId: row.tenant_id,
    environmentId: row.environment_id,
    environmentName: row.environment_name,
    plan: row.plan,
    enabledDomains: row.enabled_domains,
    tenant: toTenantRuntime(row),
  };
  if (remembered.size >= REMEMBERED_MAX && !remembered.has(keyHash)) remembered.clear();
  remembered.set(keyHash, scope);
  return scope;
}

// The scope each key had when it last authenticated in this process. Never a grant: a request
// may only use it to prepare work (an intent run scans its input and computes its cache key with
// it) while the key is looked up again, in the same statement as the run's own first read, and
// the request goes on only when the fresh scope equals it (sameScope).
const REMEMBERED_MAX = 10_000;
const remembered = new Map<string, ApiKeyScope>();

/** The scope this key had at its last successful authentication in this process, if any: a guess, never a grant. */
function rememberedScope(keyHash: string): ApiKeyScope | undefined {
  return remembered.get(keyHash);
}

/** Whether two scopes of a key are the same in every field a request may depend on. */
export function sameScope(a: ApiKeyScope, b: ApiKeyScope): boolean {
  if (a === b) return true;
  return (
    a.keyId === b.keyId &&
    a.permissions === b.permissions &&
    a.tenantId === b.tenantId &&
    a.environmentId === b.environmentId &&
    a.environmentName === b.environmentName &&
    a.plan === b.plan &&
    JSON.stringify(a.tenant) === JSON.stringify(b.tenant)
  );
}

function touchApiKey(deps: AppDeps, keyId: string, lastUsedAt: Date | null) {
  const now = Date.now();
  if (lastUsedAt && now - new Date(lastUsedAt).getTime() < TOUCH_INTERVAL_MS) return;
  const touched = recentlyTouched.get(keyId);
  if (touched && now - touched < TOUCH_INTERVAL_MS) return;
  recentlyTouched.set(keyId, now);
  if (recentlyTouched.size > 10_000) recentlyTouched.clear();
  // Fire and forget: a lost touch only makes apiKeyLastUsedAt a minute older.
  recordApiKeyUse(deps.sql, keyId).catch((err: unknown) => deps.log.warn({ err }, 'could not record api key use'));
}

/**
 * The API key of a request whose procedure may read the key together with its own first data (an
 * intent run). Without a remembered scope the key is looked up at once (`scope` set); with one,
 * `scope` stays null until the procedure reads the key, and nothing may be answered, written or
 * sent to a provider before then.
 */
export interface KeyedRequest {
  keyHash: string;
  /** The key's scope, looked up during this request (and holding `permission`). */
  scope: ApiKeyScope | null;
  /** The remembered scope to prepare with while `scope` is null. */
  guess: ApiKeyScope | null;
  /** What the route needs: checked on whichever scope the request goes on with. */
  permission: Permission;
}

/**
 * Reads the request's key (401 when missing or malformed) and looks it up unless a remembered scope
 * lets the procedure do it. A remembered scope without the route's permission is no reason to
 * refuse (the key may have gained it since): the key is looked up now and judged on what it holds.
 */
export async function beginKeyedRequest(deps: AppDeps, headers: Headers, permission: Permission): Promise<KeyedRequest> {
  const keyHash = readKeyHash(headers);
  const guess = rememberedScope(keyHash) ?? null;
  if (guess && hasPermission(guess.permissions, permission)) return { keyHash, scope: null, guess, permission };
  return { keyHash, scope: requirePermission(await authenticateKeyHash(deps, keyHash), permission), guess: null, permission };
}

/** The request's scope, looked up now if the procedure has not read the key yet (401/403 when it fails). */
export async function confirmKeyedRequest(deps: AppDeps, request: KeyedRequest): Promise<ApiKeyScope> {
  request.scope ??= requirePermission(await authenticateKeyHash(deps, request.keyHash), request.permission);
  return request.scope;
}

/** The request's scope from the key row its procedure read with its own data: the same checks, the permission too. */
export function confirmKeyRow(deps: AppDeps, request: KeyedRequest, row: ApiKeyLookupRow | undefined): ApiKeyScope {
  request.scope = requirePermission(scopeOfKeyRow(deps, request.keyHash, row), request.permission);
  return request.scope;
}

/** `scope` when its key holds `permission`; else 403 PERMISSION_DENIED naming what is missing. */
export function requirePermission(scope: ApiKeyScope, permission: Permission): ApiKeyScope {
  if (hasPermission(scope.permissions, permission)) return scope;
  throw new AppError('PERMISSION_DENIED', `This API key does not have the ${permission} permission`, {
    required: permission,
    key: scope.keyName ?? scope.environmentName ?? scope.keyPreview,
    granted: permissionList(scope.permissions),
  });
}

/** How a key is named in the audit log: its name (or its environment's) and its preview. */
export function keyActor(scope: ApiKeyScope): Actor {
  return { type: 'api_key', id: scope.keyId, name: `api-key:${scope.keyName ?? scope.environmentName ?? 'tenant'} (${scope.keyPreview})` };
}
